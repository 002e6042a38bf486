"""The design ledger only grows: an instrument built again (Run All, a restart) takes back the saved
design and the failure states already hit, and a locked instrument saves nothing (issue #36)."""

from __future__ import annotations

from course.instruments import Configurator, HudFooter
from course.ledger import Ledger

FOUR_FAILURES = ({"tp": 16}, {"tp": 1, "pp": 1}, {"tp": 8, "pp": 64, "microbatches": 1}, {"pp": 7})


def _drive(instrument, settings):
    with instrument.batch():
        for name, value in settings.items():
            instrument.controls[name].value = value


def _first_session(ledger):
    configurator = Configurator(model="gpt3-175b", cluster="h100-1024", tp=4, pp=8).restore("lab05/design",
                                                                                           ledger=ledger)
    for settings in FOUR_FAILURES:
        _drive(configurator, settings)
    _drive(configurator, {"tp": 8, "pp": 16, "microbatches": 48})  # the student's final design
    saved = configurator.record(track="Cloud")
    return configurator, saved


def test_a_rebuilt_instrument_restores_the_design_and_keeps_every_failure_state(tmp_path):
    ledger = Ledger(tmp_path / "ledger.json")
    first, saved = _first_session(ledger)
    hit = {"tp_crosses_node", "out_of_memory", "too_few_microbatches", "gpus_mismatch"}
    assert hit <= set(saved["failures_hit"])
    # Restart + Run All: the notebook builds the instrument with its defaults, then restores
    again = Configurator(model="gpt3-175b", cluster="h100-1024", tp=4, pp=8).restore("lab05/design", "Cloud",
                                                                                    ledger=ledger)
    assert (again.controls["tp"].value, again.controls["pp"].value, again.controls["microbatches"].value) == (8, 16, 48)
    assert again.result == first.result
    again.record(track="Cloud")  # the HUD cell saves again: nothing is lost
    stored = ledger.get("lab05/design")
    assert hit <= set(stored["failures_hit"]) and stored["configuration"]["pp"] == 16
    assert set(HudFooter(prefix="lab05", ledger=ledger).summary()["failures_hit"]) >= hit


def test_a_design_saved_on_another_track_restores_only_the_failures(tmp_path):
    ledger = Ledger(tmp_path / "ledger.json")
    _first_session(ledger)
    ledger.record("lab05/design", {"track": "Edge"})
    again = Configurator(model="gpt3-175b", cluster="h100-1024", tp=4, pp=8).restore("lab05/design", "Cloud",
                                                                                    ledger=ledger)
    assert (again.controls["tp"].value, again.controls["pp"].value) == (4, 8)
    assert "out_of_memory" in again.ledger_entry()["failures_hit"]


def test_saving_without_restoring_still_keeps_the_stored_failures(tmp_path):
    ledger = Ledger(tmp_path / "ledger.json")
    _first_session(ledger)
    fresh = Configurator(model="gpt3-175b", cluster="h100-1024", tp=4, pp=8)
    fresh.record("lab05/design", ledger=ledger)
    assert "out_of_memory" in ledger.get("lab05/design")["failures_hit"]


def test_a_locked_instrument_saves_nothing(tmp_path):
    ledger = Ledger(tmp_path / "ledger.json")
    configurator = Configurator().restore("lab05/design", ledger=ledger)
    configurator.set_gated(True)  # behind a prediction not locked yet
    assert configurator.record() == {}
    assert ledger.get("lab05/design") is None
    assert HudFooter(prefix="lab05", ledger=ledger).summary()["entries"] == 0


def test_a_saved_value_the_control_no_longer_offers_is_skipped(tmp_path):
    ledger = Ledger(tmp_path / "ledger.json")
    ledger.record("lab05/design", {"configuration": {"tp": 3, "pp": 4, "model": "no-such-model"},
                                   "failures_hit": ["out_of_memory"]})
    configurator = Configurator(tp=4, pp=8).restore("lab05/design", ledger=ledger)
    assert (configurator.controls["tp"].value, configurator.controls["pp"].value) == (4, 4)
    assert not configurator.last_traceback
