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
