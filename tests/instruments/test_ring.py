"""Step-by-step ring all-reduce view, replaying the core's schedule."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from course.instruments.ring import RingAllreduceView, replay, schedule_table

from .helpers import assert_alive, changed, mark_arrays, same_figures



@pytest.fixture(scope="module")
def view():
    return RingAllreduceView()


@pytest.mark.parametrize("n", range(2, 17))
def test_schedule_is_a_correct_ring_allreduce(n):
    table = schedule_table(n)
    steps = 2 * (n - 1)
    assert sorted(set(table["step"].tolist())) == list(range(steps))
    for s in range(steps):
        rows = table["step"] == s
        # every rank sends exactly one chunk to its ring neighbour and receives exactly one
        assert sorted(table["src"][rows].tolist()) == list(range(n))
        assert sorted(table["dst"][rows].tolist()) == list(range(n))
        assert np.all(table["dst"][rows] == (table["src"][rows] + 1) % n) or \
            np.all(table["dst"][rows] == (table["src"][rows] - 1) % n)
        # the first N-1 steps reduce, the last N-1 gather
        assert np.all(table["reduce"][rows] == (s < n - 1))
    held = replay(n, table)
    counts = held.sum(axis=3)  # (step, rank, chunk)
    # after reduce-scatter every chunk is complete on exactly one rank, a different rank per chunk
    complete = counts[n - 1] == n
    assert np.all(complete.sum(axis=0) == 1) and np.all(complete.sum(axis=1) == 1)
    # after all-gather every rank holds every chunk summed over all N ranks
    assert np.all(held[-1])


def test_view_steps_through_the_phases(view):
    with view.batch():
        view.controls["gpus"].value = 4
        view.controls["step"].value = 0
    assert view.result["phase"] == "before the first send" and view.result["complete_copies"] == 0
    assert view.controls["step"].max == 6
    view.controls["step"].value = 3
    assert view.result["phase"] == "reduce-scatter" and view.result["complete_copies"] == 4
    assert len(view.result["sends"]) == 4
    view.controls["step"].value = 6
    assert view.result["phase"] == "all-gather" and view.result["complete_copies"] == 16
    assert np.array_equal(view.grid.color, np.full((4, 4), 4.0))


def test_changing_n_resizes_and_clamps_the_step(view):
    view.controls["gpus"].value = 8
    view.controls["step"].value = 14
    view.controls["gpus"].value = 3
    assert view.controls["step"].max == 4 and view.controls["step"].value == 4
    assert view.play.max == 4
    assert view.result["steps"] == 4 and view.result["complete_copies"] == 9
    assert view.grid.color.shape == (3, 3)


def test_play_and_step_move_together(view):
    view.controls["gpus"].value = 4
    view.controls["step"].value = 3
    assert view.play.value == 3
    view.play.value = 5  # the Play button's tick, as the browser sends it
    assert view.controls["step"].value == 5 and view.result["step"] == 5


def test_marks_change_in_the_same_figures(view):
    view.controls["gpus"].value = 5
    view.controls["step"].value = 1
    figs, marks = list(view.figures), [m for f in view.figures for m in f.marks]
    before = mark_arrays(view)
    view.controls["step"].value = 2
    assert same_figures(view, figs, marks) and changed(before, mark_arrays(view))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(2, 16), step=st.integers(0, 30))
def test_view_fuzz(view, n, step):
    view.controls["gpus"].value = n
    view.controls["step"].value = min(step, view.controls["step"].max)
    assert_alive(view)
    assert view.failures == []
    counts = np.array(view.result["counts"])
    assert counts.shape == (n, n) and counts.min() >= 1 and counts.max() <= n
