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


def test_doctests(tmp_path):
    failures, _ = doctest.testmod(course.prediction)
    assert failures == 0


def test_choice_lock_freezes_and_cannot_be_unlocked():
    lock = choice_lock()
    assert not lock.locked and lock.value is None
    assert not lock.button.disabled  # focusable from the start, so a keyboard user never skips it
    lock.button.click()  # nothing chosen yet: it says so and locks nothing
    assert not lock.locked and "Pick an option first" in lock.status.value
    lock.input.value = "B"
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
    # a new kernel: fresh objects, same folder
    again = choice_lock()
    assert again.locked and again.value == "D" and again.input.disabled
    with pytest.raises(PredictionLockedError):
        again.answer("C")
    saved = json.loads((tmp_path / "predictions.json").read_text())
    assert saved["lab06/act1"]["value"] == "D"


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


@pytest.mark.parametrize("bad", ["Z", "a", 1, None, float("nan")])
def test_choice_lock_rejects_unknown_option(bad):
    with pytest.raises(ValueError, match="value must be one of"):
        choice_lock().answer(bad)


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(options=["x"]),
        dict(options=list("abcdefghi")),
        dict(options=None),
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
    assert choice_lock(folder="elsewhere").reveal().locked is False  # nothing locked: a message, no crash


def test_autopredict_env(monkeypatch):
    monkeypatch.setenv("COURSE_AUTOPREDICT", "1")
    assert choice_lock().value == "A"
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


def test_views_render_once_locked_and_update_in_place():
    lock = PredictionLock("lab06/act1", "q?", options=OPTIONS, correct="C", after_reveal="The master port carries it.")
    reveal, passage = lock.reveal_view(), lock.after_lock("**After.** It grows like N.", before="Lock first.")
    assert "No prediction locked yet" in reveal.widget.value and "master port" not in reveal.widget.value
    assert "Lock first." in passage.widget.value and "grows like N" not in passage.widget.value
    assert Ledger().get("lab06/act1") is None  # nothing recorded before locking
    lock.answer("C")
    assert reveal.correct is True and "master port" in reveal.widget.value and "grows like N" in passage.widget.value
    assert Ledger().get("lab06/act1")["correct"] is True


def test_a_choice_sent_just_before_the_click_is_the_one_locked():
    """Under a busy kernel ipywidgets holds back the radio group's state update but sends the Lock
    button's click at once; the group also sends each choice as a custom message, which arrives in
    order with the click. Here the kernel got A as state, then B as the custom message, then the click."""
    lock = choice_lock()
    lock.input.value = "A"  # the first choice's state update, answered
    lock.input._handle_custom_msg({"choose": "B"}, [])  # the second choice: its state update is still held back
    lock.button.click()
    assert lock.value == "B" and read_predictions(".")["lab06/act1"]["value"] == "B"
    # a choice message for a locked (disabled) group or an unknown option changes nothing
    lock.input._handle_custom_msg({"choose": "C"}, [])
    lock.input._handle_custom_msg({"choose": "Z"}, [])
    assert lock.value == "B" and lock.input.value == "B"
    assert "model.send({ choose: key })" in course.prediction._RADIO_GROUP  # the browser half sends it


def test_a_gated_instrument_has_hit_no_failure_state_until_the_lock_opens():
    # Lab 06 Act II: the dashboard's 350 GB preset is comm bound; hidden behind the unlocked lock the student
    # has not seen that banner, so the HUD must not list it; once locked, it shows and counts
    from course.instruments import AlgorithmDashboard

    dashboard = AlgorithmDashboard(gpus=128)
    assert "comm_bound" in dashboard.failures  # the preset really is in that state
    lock = choice_lock()
    lock.gate(dashboard)
    assert dashboard.ledger_entry()["failures_hit"] == []
    lock.answer("A")
    assert "comm_bound" in dashboard.ledger_entry()["failures_hit"]


def test_a_choice_sent_as_a_message_is_not_echoed_back_to_the_browser():
    # the browser already shows the choice; an echo arriving after the student moved on re-checked the older
    # option and moved the keyboard focus to it (seen in CI: ArrowLeft to B, then Tab landed on "radio C")
    lock = choice_lock()
    sent = []
    lock.input._send = lambda msg, buffers=None: sent.append(msg)
    lock.input._on_choose(lock.input, {"choose": "C"}, [])
    assert lock.input.value == "C"
    assert not [m for m in sent if "value" in m.get("state", {})], sent
    # a value set by the kernel itself (a restored lock) still reaches the browser
    lock.input.value = "B"
    assert [m for m in sent if m.get("state", {}).get("value") == "B"], sent
