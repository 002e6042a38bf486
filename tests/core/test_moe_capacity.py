"""Expert capacity, dropped tokens and the busiest expert (course.core.moe_capacity).

Expected values are counted by hand from the definitions (Switch Transformer eq. 3, GShard's
overflow rule) or simulated: a routed micro-batch is drawn token by token and counted.
"""

import math
import random

import numpy as np
import pytest

from course import core
from course.core import moe_capacity


def test_capacity_of_the_switch_and_gshard_settings():
    # Switch (top-1): 1,024 tokens over 64 experts at C = 1.0 is 16 per expert; GShard top-2 doubles it
    assert core.expert_capacity(1024, 1, 64, 1.0) == 16
    assert core.expert_capacity(1024, 2, 64, 1.0) == 32
    assert core.expert_capacity(1000, 1, 64, 1.0) == 16  # 15.625 rounds up to a whole token
    assert isinstance(core.expert_capacity(1024, 1, 64, 1.0), int)


def test_capacity_broadcasts_over_arrays():
    got = core.expert_capacity(np.array([1024, 4096]), 2, 8, np.array([1.0, 1.25]))
    assert got.tolist() == [256, 1280]


def test_dropped_tokens_count_a_simulated_micro_batch():
    rng = random.Random(3)
    tokens, top_k, experts = 2000, 2, 16
    loads = [0] * experts
    for _ in range(tokens):
        for e in rng.sample(range(experts), top_k):
            loads[e] += 1
    capacity = core.expert_capacity(tokens, top_k, experts, 1.0)
    by_hand = sum(max(0, load - capacity) for load in loads)
    assert core.dropped_tokens(loads, capacity) == by_hand > 0
    assert core.dropped_tokens(loads, max(loads)) == 0
    assert core.busiest_load_ratio(loads) == pytest.approx(max(loads) / (tokens * top_k / experts))


def test_dropped_share_is_close_to_the_gaussian_expectation_for_many_micro_batches():
    # the counted drops over many uniform micro-batches agree with moe.dropped_token_fraction
    rng = np.random.default_rng(0)
    tokens, experts, C = 4096, 64, 1.1
    loads = rng.multinomial(tokens, [1 / experts] * experts, size=400)
    capacity = core.expert_capacity(tokens, 1, experts, C)
    counted = core.dropped_tokens(loads, capacity).sum() / (400 * tokens)
    expected = core.dropped_token_fraction(capacity / (tokens / experts), math.sqrt(experts / tokens))
    assert counted == pytest.approx(expected, rel=0.15)


@pytest.mark.parametrize("call, name", [
    (lambda: core.expert_capacity(0, 1, 8, 1.0), "tokens"),
    (lambda: core.expert_capacity(10, 9, 8, 1.0), "top_k"),
    (lambda: core.expert_capacity(10, 1, 0, 1.0), "experts"),
    (lambda: core.expert_capacity(10, 1, 8, 0.0), "capacity_factor"),
    (lambda: core.expert_capacity(10.5, 1, 8, 1.0), "tokens"),
    (lambda: core.dropped_tokens([3, -1], 2), "expert_loads"),
    (lambda: core.dropped_tokens(5, 2), "expert_loads"),
    (lambda: core.dropped_tokens([3, 1], -2), "capacity"),
    (lambda: core.busiest_load_ratio([0, 0]), "expert_loads"),
])
def test_invalid_input_names_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_exported_from_the_core():
    assert set(moe_capacity.__all__) <= set(dir(core))
