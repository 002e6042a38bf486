"""Progress on the index, from what the package writes: real locks, reveals and visible checks.

Every ledger entry here is written by the code a student runs: the lab sessions'
lock widgets (an option set on the radio buttons, then the Lock button clicked),
their reveals, and a workbook visible check. The index notebook is then
executed and its progress cell must show them.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from course.notebook_api.lab_session import LabSession, labs
from course.ledger import Ledger
from course.progress import summary, to_html

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def ledger_path(tmp_path, monkeypatch):
    path = tmp_path / "ledger.json"
    monkeypatch.setenv("COURSE_LEDGER", str(path))
    monkeypatch.delenv("COURSE_AUTOPREDICT", raising=False)
    return path


def lock_everything(folder, wrong=()):
    """Lock every declared prediction through its widget (the correct option unless in ``wrong``)."""
    chosen = {}
    for prefix, lab in labs().items():
        session = LabSession(prefix, folder=folder)  # default ledger: $COURSE_LEDGER
        for act in lab.acts:
            if act.lock is None:
                continue
            widget = session.lock(act.id)
            key = lab.lock_key(act.id)
            # a wrong option this student is shown (a scale shows a window of its options)
            option = next(o for o in widget.options if o != act.lock.correct) if key in wrong else act.lock.correct
            widget.input.value = option
            assert not widget.button.disabled
            widget.button.click()
            assert widget.locked and widget.value == option
            reveal = session.reveal(act.id)
            assert reveal.correct is (key not in wrong)
            chosen[key] = option
    return chosen


def test_empty_ledger_shows_nothing_done(ledger_path):
    s = summary()
    assert s["labs"]["lab05"]["locks_total"] == 3 and s["labs"]["lab05"]["locked"] == 0
    assert s["labs"]["lab06"]["locks_total"] == 2 and s["labs"]["tutorial"]["locks_total"] == 1
    assert all(ch["attempted"] == 0 and ch["points"] is None for ch in s["chapters"].values())
    assert len(s["chapters"]) == 12


def test_locks_and_reveals_counted_per_act(ledger_path, tmp_path):
    lock_everything(tmp_path, wrong={"lab05/act2"})
    s = summary()
    lab05 = s["labs"]["lab05"]
    assert (lab05["locked"], lab05["revealed"], lab05["correct"]) == (3, 3, 2)
    act2 = next(a for a in lab05["acts"] if a["id"] == "act2")
    assert act2["lock"] == {"key": "lab05/act2", "locked": True, "revealed": True, "correct": False}
    assert [p["grade_id"] for p in act2["parts"]] == ["lab05_act2_memory"]
    assert (s["labs"]["lab06"]["correct"], s["labs"]["tutorial"]["correct"]) == (2, 1)
    lab07 = s["labs"]["lab07"]  # Lab 07's three acts, each with its lock and its graded number
    assert (lab07["locks_total"], lab07["locked"], lab07["revealed"], lab07["correct"]) == (3, 3, 3, 3)
    assert [p["grade_id"] for a in lab07["acts"] for p in a["parts"]] == [
        "lab07_act1_expert_state", "lab07_act2_alltoall", "lab07_act3_straggler"]
    assert "Lab 07 · Mixtures of experts · 3/3 predictions locked" in to_html(s)


def test_a_lock_without_reveal_is_locked_not_revealed(ledger_path, tmp_path):
    session = LabSession("lab06", folder=tmp_path)
    lock = session.lock("act1")
    lock.input.value = "2x"  # the option that says "about 2x", wherever it sits
    lock.button.click()
    act1 = summary()["labs"]["lab06"]["acts"][0]
    assert act1["lock"]["locked"] and not act1["lock"]["revealed"]
    assert "locked, not revealed" in to_html(summary())


def test_visible_check_and_imported_points_reach_the_chapter_row(ledger_path):
    from course.notebook_api import check
    from course.notebook_api.mastery import record_points

    check("0.1", {})  # nothing assigned: not an attempt (a blank notebook's checks reveal nothing)
    row = summary()["chapters"]["ch00"]
    assert (row["attempted"], row["attempts"], row["visible_passed"], row["points"]) == (0, 0, 0, None)
    check("0.1", {"volume_gb": 1e-3})  # a wrong answer: an attempt that does not pass
    row = summary()["chapters"]["ch00"]
    assert (row["attempted"], row["attempts"], row["visible_passed"], row["points"]) == (1, 1, 0, None)
    record_points({"ch00_ex0_1": (1.0, 2.0)}, Ledger(ledger_path))
    row = summary()["chapters"]["ch00"]
    assert (row["points"], row["max_points"]) == (1.0, 2.0)


@pytest.mark.slow
def test_real_locks_appear_on_the_index(ledger_path, tmp_path):
    lock_everything(tmp_path, wrong={"lab06/act1"})
    nb = nbformat.read(REPO / "notebooks" / "index.ipynb", as_version=4)
    NotebookClient(nb, timeout=180, kernel_name="python3",
                   resources={"metadata": {"path": str(REPO / "notebooks")}}).execute()
    page = "".join(str(o.get("data", {}).get("text/html", "")) for c in nb.cells if c.cell_type == "code"
                   for o in c.outputs)
    assert "Lab 05 · The parallelism paradox · 3/3 predictions locked, 3 revealed, 3 correct" in page
    assert "Lab 06 · The bandwidth invariant · 2/2 predictions locked, 2 revealed, 1 correct" in page
    rows = dict(re.findall(r"data-key='([^']+)'><td>[^<]*</td><td class='course-progress-lock'>([^<]*)<", page))
    assert rows["lab06_bandwidth_invariant/act1"] == "locked, revealed: prediction wrong"
    assert rows["lab05_parallelism_paradox/part3"] == "locked, revealed: prediction correct"
    assert rows["tutorial_3d_parallelism/ex1"] == "locked, revealed: prediction correct"
