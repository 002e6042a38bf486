"""Seeded probe inputs for Build and Debug parts (made on the trusted side)."""

from __future__ import annotations

import math
import random
from typing import Callable, Dict, List


def log_uniform(rng: random.Random, low: float, high: float) -> float:
    return math.exp(rng.uniform(math.log(low), math.log(high)))


def make_probes(fixed: List[list], random_args: Callable[[random.Random], list], invalid: List[list],
                count: int = 40) -> Callable[[int], Dict[str, List[list]]]:
    """``probes(seed)``: the fixed cases (worked example, edge cases) plus ``count`` seeded random ones."""
    def probes(seed: int = 0) -> Dict[str, List[list]]:
        rng = random.Random(f"probes:{seed}")
        return {"valid": [list(a) for a in fixed] + [random_args(rng) for _ in range(count)],
                "invalid": [list(a) for a in invalid]}
    return probes
