"""Prediction locks: frozen once locked, survive re-creation, gate, reveal, graders' read."""

from __future__ import annotations

import doctest
import json

import ipywidgets as widgets
import pytest

import course.prediction
from course.ledger import Ledger
from course.prediction import PredictionLock, PredictionLockedError, read_predictions

OPTIONS = {"A": "about 2x", "B": "about 14x", "C": "about 128x", "D": "about 1000x"}


def choice_lock(**kw):
    return PredictionLock("lab06/act1", "naive / ring at 128 GPUs?", options=OPTIONS, correct="C", **kw)


def number_lock(**kw):
    return PredictionLock("lab05/act1", "MFU at 1024 GPUs?", bounds=(0, 100), default=40, unit="%", **kw)


def test_doctests(tmp_path):
    failures, _ = doctest.testmod(course.prediction)
    assert failures == 0


def test_choice_lock_freezes_and_cannot_be_unlocked():
    lock = choice_lock()
    assert not lock.locked and lock.value is None
    assert lock.button.disabled  # nothing chosen yet
    lock.input.value = "B"
    assert not lock.button.disabled
    lock.button.click()
    assert lock.locked and lock.value == "B"
    assert lock.input.disabled and lock.button.disabled
    # lock() again: ignored with a message; answer(other): raises; widget edits revert
    lock.lock()
    assert lock.value == "B" and "Already locked" in lock.status.value
    with pytest.raises(PredictionLockedError):
        lock.answer("C")
    lock.answer("B")  # same answer: harmless
    lock.input.value = "D"
    assert lock.input.value == "B" and lock.value == "B"
    assert "cannot be changed" in lock.status.value


def test_lock_without_choice_does_nothing():
    lock = choice_lock()
    lock.lock()
    assert not lock.locked and "Pick an option" in lock.status.value
    assert read_predictions(".") == {}


def test_survives_recreation_like_a_kernel_restart(tmp_path):
    choice_lock().answer("D")
    number_lock().answer(12.5)
    # a new kernel: fresh objects, same folder
    again = choice_lock()
    assert again.locked and again.value == "D" and again.input.disabled
    with pytest.raises(PredictionLockedError):
        again.answer("C")
    num = number_lock()
    assert num.locked and num.value == 12.5
    saved = json.loads((tmp_path / "predictions.json").read_text())
    assert saved["lab06/act1"]["value"] == "D" and saved["lab05/act1"]["value"] == 12.5


def test_lock_is_recorded_in_the_ledger(tmp_path):
    choice_lock().answer("C")
    entry = Ledger().get("lab06/act1")
    assert entry["prediction"] == "C" and "prediction_locked_at" in entry


def test_first_writer_wins_across_two_kernels():
    first, second = choice_lock(), choice_lock()  # both created before either locked
    first.answer("A")
    second.input.value = "C"
    second.lock()
    assert second.value == "A"  # the file already held A; it stays A everywhere
    assert read_predictions(".")["lab06/act1"]["value"] == "A"


@pytest.mark.parametrize("bad", [-1, 101, float("nan"), "lots", None])
def test_number_lock_rejects_out_of_bounds(bad):
    with pytest.raises(ValueError, match="value must be a number in"):
        number_lock().answer(bad)


def test_choice_lock_rejects_unknown_option():
    with pytest.raises(ValueError, match="value must be one of"):
        choice_lock().answer("Z")


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(options=["x"]),
        dict(options=list("abcdefghi")),
        dict(bounds=(5, 1)),
        dict(bounds=(0, float("inf"))),
        dict(options=["a", "b"], bounds=(0, 1)),
        dict(),
        dict(options=["a", "b"], correct="Q"),
    ],
)
def test_invalid_construction_raises(kwargs):
    with pytest.raises(ValueError):
        PredictionLock("k/1", "q?", **kwargs)


def test_gate_hides_until_locked():
    lock = choice_lock()
    box = widgets.IntSlider()

    class FakeInstrument:
        gated = None

        def set_gated(self, gated):
            self.gated = gated

    inst = FakeInstrument()
    assert lock.gate(inst, box) is inst
    assert inst.gated is True and box.layout.display == "none" and box.disabled
    lock.answer("A")
    assert inst.gated is False and box.layout.display is None and not box.disabled
    # gating after the lock is already locked shows at once
    later = widgets.IntSlider()
    lock.gate(later)
    assert later.layout.display is None


def test_reveal_number_ratio_and_close_threshold():
    lock = number_lock()
    assert lock.reveal(40).locked is False  # nothing locked: a message, no crash
    lock.answer(13)
    r = lock.reveal(10)
    assert r.ratio == pytest.approx(1.3) and r.correct is True
    assert lock.reveal(9.9).correct is False  # 13/9.9 = 1.313 > 1.30
    assert lock.reveal(130).correct is False
    assert Ledger().get("lab05/act1")["ratio"] == pytest.approx(13 / 130)
    with pytest.raises(ValueError):
        lock.reveal(0)
    assert "ratio" in r._repr_html_()


def test_reveal_choice_uses_correct_and_explanation():
    lock = PredictionLock(
        "lab06/act1", "q?", options=OPTIONS, correct="C",
        explanations={"A": "Two passes is the ring, not the ratio.", "C": "The master carries (N-1)M twice."},
    )
    lock.answer("A")
    r = lock.reveal()
    assert r.correct is False and r.actual == "C" and "Two passes" in r.explanation
    assert Ledger().get("lab06/act1")["correct"] is False
    assert lock.reveal("A").correct is True


def test_autopredict_env(monkeypatch):
    monkeypatch.setenv("COURSE_AUTOPREDICT", "1")
    assert choice_lock().value == "A"
    assert number_lock().value == 40
    monkeypatch.setenv("COURSE_AUTOPREDICT", json.dumps({"other/act": "B"}))
    assert not PredictionLock("x/1", "q", options=OPTIONS).locked
    monkeypatch.setenv("COURSE_AUTOPREDICT", json.dumps({"x/2": "D"}))
    assert PredictionLock("x/2", "q", options=OPTIONS).value == "D"


def test_read_predictions_is_tolerant_and_read_only(tmp_path):
    assert read_predictions(tmp_path) == {}
    (tmp_path / "predictions.json").write_text("{broken")
    assert read_predictions(tmp_path) == {}
    assert (tmp_path / "predictions.json").read_text() == "{broken"  # evidence untouched
    (tmp_path / "predictions.json").write_text(json.dumps({
        "ok/1": {"value": "C", "locked": True},
        "bad/1": {"value": {"always": "equal"}},
        "bad/2": "string",
        "bad/3": {"value": 1, "locked": False},
    }))
    assert list(read_predictions(tmp_path)) == ["ok/1"]


def test_corrupt_predictions_file_does_not_block_a_new_lock(tmp_path):
    (tmp_path / "predictions.json").write_text("{broken")
    lock = choice_lock()
    assert not lock.locked
    with pytest.warns(UserWarning, match="moved to"):
        lock.answer("B")
    assert read_predictions(tmp_path)["lab06/act1"]["value"] == "B"
    assert list(tmp_path.glob("predictions.json.corrupt-*"))
