"""The order in which one student sees each prediction lock's options.

A lock's options are declared once, with stable ids (:class:`~course.assess.items.Lock`); what a
student sees is an order drawn from their own seed, so that where the right option sits says
nothing. Two rules hold for every student:

* **Stable.** The order is a function of the course, the student and the list of locks only: the
  same after a restart, on another machine and in the grader's kernel.
* **Balanced across the course.** Walking the course's locks in their listed order, each lock puts
  its right option at a position (0 = first) where the fewest earlier locks put theirs, choosing
  among ties at random: no position holds the right option of more than a third of the locks
  (with four options, about a quarter each). The walk only looks back, so a lock added at the end
  of the list (a new lab) leaves every earlier lock's order unchanged.

A lock declared ``ordered`` (a scale: "2x / 7x / 128x") keeps its sequence and is shown either as
declared or reversed, whichever balances better; so its right option is not always in one place.

>>> from course.assess.items import Lock
>>> locks = [(f"lab/act{i}", Lock("?", {"a": "1", "b": "2", "c": "3", "d": "4"}, "b", "")) for i in range(6)]
>>> orders = option_orders(locks, "ada")
>>> sorted(orders["lab/act0"]) == ["a", "b", "c", "d"]
True
>>> orders == option_orders(locks, "ada")
True
>>> max(positions_of_right(locks, orders).count(p) for p in range(4)) <= 2
True
"""

from __future__ import annotations

import hashlib
import random
from typing import Dict, List, Optional, Sequence, Tuple

from .items import Lock
from .variants import COURSE_ID, _clean

#: what seeds the orders of a student with no identity (everyone then sees the same, still balanced)
NOBODY = ""


def order_seed(student: Optional[str]) -> int:
    """The seed of ``student``'s option orders: SHA-256 of (course, "lock order", student), as variants are."""
    digest = hashlib.sha256(f"{COURSE_ID}\0lock order\0{_clean(student) or NOBODY}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def option_orders(locks: Sequence[Tuple[str, Lock]], student: Optional[str]) -> Dict[str, Tuple[str, ...]]:
    """``{lock key: option ids in the order this student sees them}`` for the course's ``locks``
    (``(key, lock)`` pairs in the course's order; see the module docstring)."""
    rng = random.Random(order_seed(student))
    counts: Dict[int, int] = {}
    orders: Dict[str, Tuple[str, ...]] = {}
    for key, lock in locks:
        ids = list(lock.options)
        right = ids.index(lock.correct)
        if lock.ordered:
            choices = {right: ids, len(ids) - 1 - right: ids[::-1]}
        else:
            choices = {p: None for p in range(len(ids))}
        fewest = min(counts.get(p, 0) for p in choices)
        place = rng.choice(sorted(p for p in choices if counts.get(p, 0) == fewest))
        counts[place] = counts.get(place, 0) + 1
        if lock.ordered:
            orders[key] = tuple(choices[place])
            continue
        others = [i for i in ids if i != lock.correct]
        rng.shuffle(others)
        others.insert(place, lock.correct)
        orders[key] = tuple(others)
    return orders


def positions_of_right(locks: Sequence[Tuple[str, Lock]], orders: Dict[str, Tuple[str, ...]]) -> List[int]:
    """Where each lock's right option sits in ``orders`` (0 = first), in the course's order."""
    return [orders[key].index(lock.correct) for key, lock in locks]
