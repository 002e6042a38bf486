"""Progress and mastery view over the ledger."""

import doctest

import course.progress
from course.ledger import Ledger
from course.progress import show, summary, to_html


def test_doctests():
    assert doctest.testmod(course.progress).failed == 0


def test_empty_ledger_gives_zeros(tmp_path):
    s = summary(Ledger(tmp_path / "l.json"))
    assert s["labs"]["lab05"]["acts_completed"] == 0 and s["labs"]["lab05"]["acts_total"] == 2
    assert all(ch["attempted"] == 0 and ch["points"] is None for ch in s["chapters"].values())
    assert len(s["chapters"]) == 10


def test_counts_from_entries(tmp_path):
    ledger = Ledger(tmp_path / "l.json")
    ledger.record("lab05/act1", {"prediction": "B", "correct": False, "configuration": {"tp": 8},
                                 "failures_hit": ["oom"]})
    ledger.record("lab05/act2", {"prediction": 40.0})  # locked, act not finished
    ledger.record("ch01/ex1_1", {"attempted": 2, "passed": True, "points": 2, "max_points": 2})
    ledger.record("ch01/ex1_2", {"attempted": 1, "passed": False, "points": 0.5, "max_points": 3})
    ledger.record("ch10/ex10_1", {"passed": True})  # not a chapter of this course: ignored
    s = summary(ledger)
    lab = s["labs"]["lab05"]
    assert (lab["acts_completed"], lab["predictions_locked"], lab["predictions_correct"]) == (1, 2, 0)
    assert lab["failures_hit"] == ["oom"]
    ch = s["chapters"]["ch01"]
    assert (ch["attempted"], ch["visible_passed"], ch["points"], ch["max_points"]) == (2, 1, 2.5, 5.0)
    html = to_html(s)
    assert "Parallelism Paradox" in html and "2.5 / 5" in html


def test_show_displays_by_itself(tmp_path, monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj: shown.append(obj))
    assert show(Ledger(tmp_path / "l.json")) is None
    assert "Ring all-reduce" in shown[0].data
