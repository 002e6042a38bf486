"""The order in which one student sees each prediction lock's options.

A lock's options are declared once, with stable ids (:class:`~course.assess.items.Lock`); what a
student sees is an order drawn from their own seed, so that where the right option sits says
nothing. Three rules hold for every student:

* **Stable.** The order is a function of the course, the student and the list of locks only: the
  same after a restart, on another machine and in the grader's kernel.
* **Uniform per lock.** Each lock draws its right option's position from its own seed (student and
  lock key), uniformly among the places it may take: across a class, no place is the usual one for
  any lock. (An earlier greedy balance filled each student's positions evenly in the course's order,
  which left the last locks' right options at A or D for 9 students in 10 and let a student who had
  counted the earlier reveals deduce the last one.)
* **Capped across the course.** No position holds the right option of more than a third of the
  locks (at least ``ceil(locks / 4)``): where the independent draws exceed that, locks are moved off
  the crowded position, the latest in the course's order first, to a position of their own choice
  that is under the cap. So a lock added at the end moves an earlier lock only when it tips a
  position over the cap; the options are stored, graded and reported by id, so a moved order changes
  only what an unlocked lock shows.

A lock declared ``ordered`` (a scale: "2x / 7x / 128x") keeps its sequence and is shown either as
declared or reversed, at random; so its right option is not always in one place. A scale declared
with more options than it shows (``Lock.shown``) is shown as a window of neighbouring options, placed
(and turned) so that its right option may take every position a shuffled lock's may: a scale is no
longer a sign that the answer sits in the middle.

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


def _lock_rng(seed: int, key: str, purpose: str) -> random.Random:
    """A generator of its own for one lock of one student (``purpose``: the first draw or a move under the cap)."""
    digest = hashlib.sha256(f"{seed}\0{key}\0{purpose}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _windows(lock: Lock) -> List[Tuple[int, bool]]:
    """The ways a scale may be shown: ``(first option's index, reversed)`` for each window of
    ``lock.shown`` neighbouring options (the whole scale when ``shown`` is 0), either way round."""
    size = lock.shown or len(lock.options)
    return [(start, turned) for start in range(len(lock.options) - size + 1) for turned in (False, True)]


def _window_ids(lock: Lock, start: int, turned: bool) -> Tuple[str, ...]:
    ids = list(lock.options)[start:start + (lock.shown or len(lock.options))]
    return tuple(ids[::-1] if turned else ids)


def _places(lock: Lock) -> List[int]:
    """Where ``lock``'s right option may sit: anywhere, or (a scale) where one of its windows puts it."""
    if not lock.ordered:
        return list(range(len(lock.options)))
    return sorted({_window_ids(lock, *w).index(lock.correct) for w in _windows(lock)
                   if lock.correct in _window_ids(lock, *w)})


def option_orders(locks: Sequence[Tuple[str, Lock]], student: Optional[str]) -> Dict[str, Tuple[str, ...]]:
    """``{lock key: option ids in the order this student sees them}`` for the course's ``locks``
    (``(key, lock)`` pairs in the course's order; see the module docstring)."""
    seed = order_seed(student)
    cap = max(len(locks) // 3, -(-len(locks) // 4), 1)
    place = {key: _lock_rng(seed, key, "place").choice(_places(lock)) for key, lock in locks}
    counts: Dict[int, int] = {}
    for p in place.values():
        counts[p] = counts.get(p, 0) + 1
    moved = True
    while moved and max(counts.values(), default=0) > cap:
        moved = False
        for key, lock in reversed(locks):
            if counts[place[key]] <= cap:
                continue
            free = [p for p in _places(lock) if counts.get(p, 0) < cap]
            if free:
                counts[place[key]] -= 1
                place[key] = _lock_rng(seed, key, f"move from {place[key]}").choice(free)
                counts[place[key]] = counts.get(place[key], 0) + 1
                moved = True
    orders: Dict[str, Tuple[str, ...]] = {}
    for key, lock in locks:
        ids = list(lock.options)
        if lock.ordered:
            fits = [w for w in _windows(lock) if _window_ids(lock, *w)[place[key]:place[key] + 1] == (lock.correct,)]
            orders[key] = _window_ids(lock, *_lock_rng(seed, key, "window").choice(fits))
            continue
        others = [i for i in ids if i != lock.correct]
        _lock_rng(seed, key, "others").shuffle(others)
        others.insert(place[key], lock.correct)
        orders[key] = tuple(others)
    return orders


def widened(lock: Lock, order: Sequence[str], kept: str) -> Tuple[str, ...]:
    """``order`` (a window of the scale ``lock``) stretched to hold ``kept``, an option of the scale the
    window leaves out (a prediction locked when it was shown): the neighbours from one to the other, in
    the window's direction, so the scale still reads in order.

    >>> scale = Lock("?", {"a": "1", "b": "2", "c": "3", "d": "4", "e": "5"}, "b", "", ordered=True, shown=3)
    >>> widened(scale, ("c", "b", "a"), "e")
    ('e', 'd', 'c', 'b', 'a')
    """
    ids = list(lock.options)
    places = sorted(ids.index(i) for i in (*order, kept))
    span = ids[places[0]:places[-1] + 1]
    turned = len(order) > 1 and ids.index(order[0]) > ids.index(order[-1])
    return tuple(span[::-1] if turned else span)


def positions_of_right(locks: Sequence[Tuple[str, Lock]], orders: Dict[str, Tuple[str, ...]]) -> List[int]:
    """Where each lock's right option sits in ``orders`` (0 = first), in the course's order."""
    return [orders[key].index(lock.correct) for key, lock in locks]
