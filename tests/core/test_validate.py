import numpy as np
import pytest

from course.core import _validate as v


def test_positive_names_parameter():
    with pytest.raises(ValueError, match="bandwidth must be > 0"):
        v.positive("bandwidth", [1.0, -2.0])


def test_nan_never_passes():
    with pytest.raises(ValueError, match="latency must be finite"):
        v.non_negative("latency", float("nan"))


def test_integer_rejects_fractions_and_small_values():
    with pytest.raises(ValueError, match="n must be a whole number"):
        v.integer("n", 2.5)
    with pytest.raises(ValueError, match="n must be >= 1"):
        v.integer("n", 0)
    assert v.integer("n", np.array([1.0, 8.0])).dtype == np.int64


def test_choice_lists_allowed_names():
    with pytest.raises(ValueError, match="algorithm must be one of 'ring', 'tree'"):
        v.choice("algorithm", "star", ["ring", "tree"])


def test_integer_rejects_values_that_would_wrap_in_int64():
    with pytest.raises(ValueError, match="n must be <= 2\\*\\*53"):
        v.integer("n", 1e19)


def test_huge_rank_count_is_an_error_not_a_wrapped_result():
    from course.core import allreduce_time

    with pytest.raises(ValueError, match="n must be"):
        allreduce_time(1e9, 1e19, 1e9)


# The fast paths (plain Python numbers, integer arrays) must give the same answers and
# the same errors as the general path.

@pytest.mark.parametrize("value", [float("inf"), float("nan"), np.float64("nan"), np.array([1.0, np.inf])])
def test_every_path_rejects_non_finite(value):
    with pytest.raises(ValueError, match="x must be finite"):
        v.positive("x", value)


def test_huge_python_int_is_a_value_error_naming_the_parameter():
    with pytest.raises(ValueError, match="params must be"):
        v.positive("params", 10**400)
    with pytest.raises(ValueError, match="n must be <= 2\\*\\*53"):
        v.integer("n", 2**60)


@pytest.mark.parametrize("array", [np.array([4, 0, 8]), np.array([4, 0, 8], dtype=np.uint8)])
def test_integer_arrays_still_check_the_minimum(array):
    with pytest.raises(ValueError, match="dp must be >= 1"):
        v.integer("dp", array)


def test_integer_arrays_beyond_2_53_are_rejected():
    with pytest.raises(ValueError, match="n must be <= 2\\*\\*53"):
        v.integer("n", np.array([1, 2**62], dtype=np.int64))
    with pytest.raises(ValueError, match="n must be <= 2\\*\\*53"):
        v.integer("n", np.array([1, 2**63], dtype=np.uint64))


def test_paths_agree_on_values_and_types():
    assert v.integer("n", 8).dtype == v.integer("n", 8.0).dtype == v.integer("n", np.array([8])).dtype == np.int64
    assert float(v.positive("x", 3)) == float(v.positive("x", 3.0)) == 3.0
    assert v.integer("n", np.array([1, 2, 3], dtype=np.int32)).tolist() == [1, 2, 3]
    with pytest.raises(ValueError, match="n must be >= 1"):
        v.integer("n", -5)
    with pytest.raises(ValueError, match="x must be > 0"):
        v.positive("x", 0)
