"""A lock owns its reveal: every word written for after a prediction is part of the lock's
declaration and is rendered by the lock once the student locks, never as static markdown.

A notebook shows all its cells at once, so a student who scrolls past a lock must not read
what it asks. Checked on the release notebooks (what students get) and on a kernel's views.
"""

from __future__ import annotations

import re

import nbformat
import pytest

from course.notebook_api.lab_session import LabSession, labs

LABS = labs()


def _release_markdown(lab) -> str:
    nb = nbformat.read(f"release/{lab.name}/{lab.name}.ipynb", 4)
    return "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")


def _sentences(text: str):
    """The sentences of ``text`` long enough to be recognised (markdown markup removed)."""
    plain = re.sub(r"[*`>_#]", "", text)
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", plain) if len(s.strip()) > 40]


@pytest.mark.parametrize("prefix", sorted(LABS))
def test_no_reveal_text_stands_in_the_release_markdown(prefix):
    lab = LABS[prefix]
    markdown = re.sub(r"[*`>_#]", "", _release_markdown(lab))
    for act in lab.acts:
        if act.lock is None:
            continue
        for sentence in _sentences(act.lock.explanation + "\n" + act.lock.reveal):
            assert sentence not in markdown, f"{prefix}/{act.id}: {sentence!r} stands in markdown"
        for reflection in act.reflections:  # a reflection of a locked act presumes its answer
            for sentence in _sentences(reflection.prompt):
                assert sentence not in markdown, f"{prefix}/{reflection.id}: the prompt stands in markdown"


def test_the_passages_found_after_the_locks_moved_into_them():
    # each stood in a markdown cell right after its lock (issue 23): now the lock renders it
    lab05, lab06 = LABS["lab05"], LABS["lab06"]
    assert "MFU drops sharply, because the gradients leave NVLink" in lab05.lock_of("act1").reveal
    assert "Math peek" in lab05.lock_of("act1").reveal and "Math peek" in lab06.lock_of("act2").reveal
    assert "drive the instruments above into each failure state" in lab05.lock_of("act2").reveal
    assert "MFU drops sharply" not in _release_markdown(lab05)
    assert "Math peek" not in _release_markdown(lab05) + _release_markdown(lab06)


def test_the_lock_renders_its_reveal_in_place_and_again_after_a_restart(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_LEDGER", str(tmp_path / "ledger.json"))
    monkeypatch.delenv("COURSE_AUTOPREDICT", raising=False)
    lock = LABS["lab05"].lock_of("act1")
    session = LabSession("lab05", folder=tmp_path)
    reveal, question = session.reveal("act1"), session.ask("act1_why")  # cells run before locking
    assert not reveal.locked and "MFU drops sharply" not in reveal.widget.value
    assert "Turn on" not in question.widget.value and "once you have locked" in question.widget.value
    session.lock("act1").answer(lock.correct)
    # the same views, updated in place by the lock
    assert reveal.locked and reveal.correct is True
    assert "MFU drops sharply" in reveal.widget.value and "Turn on" in question.widget.value
    restarted = LabSession("lab05", folder=tmp_path)  # a new kernel: restored from predictions.json
    assert "MFU drops sharply" in restarted.reveal("act1").widget.value
    assert "Turn on" in restarted.ask("act1_why").widget.value
