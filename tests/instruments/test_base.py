"""The instrument pattern itself, on a toy instrument (no core needed)."""

from __future__ import annotations

import doctest

import bqplot as bq
import ipywidgets as widgets
import numpy as np
import pytest

import course.instruments.base
from course.instruments import HudFooter, Instrument, figure, stakeholder_card
from course.ledger import Ledger

from .helpers import assert_alive, changed, mark_arrays, same_figures


class Toy(Instrument):
    title = "Toy"

    def build(self):
        self.add_control("x", widgets.FloatSlider(value=2, min=-10, max=10))
        self.add_control("mode", widgets.Dropdown(options=["ok", "boom", "invalid"], value="ok"))
        self.add_control("preset", widgets.Dropdown(options=["a", "b"], value="a"), triggers_update=False)
        xs, ys = bq.LinearScale(), bq.LinearScale()
        self.curve = bq.Lines(x=[0.0], y=[0.0], scales={"x": xs, "y": ys})
        self.add_figure(figure([self.curve], xs, ys, "x", "x squared"))
        self.add_card("value", "x squared")
        self.observe("preset", self._apply_preset)

    def _apply_preset(self, change):
        if change["new"] == "b":
            raise KeyError("no such preset")

    def refresh(self, v):
        if v["mode"] == "boom":
            raise ZeroDivisionError("kaboom")
        if v["mode"] == "invalid":
            raise ValueError("x must be >= 0")
        grid = np.linspace(0, v["x"], 16)
        self.set_marks(self.curve, x=grid, y=grid**2)
        self.set_card("value", f"{v['x'] ** 2:.3g}")
        self.set_math(f"y = {v['x']:.3g}<sup>2</sup>")
        if v["x"] < 0:
            self.flag("negative", "x is negative")
        return {"y": np.float64(v["x"] ** 2), "grid": grid}


def test_doctests():
    assert doctest.testmod(course.instruments.base).failed == 0


def test_control_change_updates_marks_not_figure():
    toy = Toy()
    figs, marks = list(toy.figures), [m for f in toy.figures for m in f.marks]
    before = mark_arrays(toy)
    toy.controls["x"].value = 5
    assert same_figures(toy, figs, marks)
    assert changed(before, mark_arrays(toy))
    assert toy.result["y"] == 25.0 and isinstance(toy.result["y"], float)
    assert isinstance(toy.result["grid"], list)
    assert "25" in toy._cards["value"].value and "5<sup>2" in toy.math_peek.value
    assert toy.update_count == 2


def test_initial_values_by_name_and_unknown_names():
    assert Toy(x=3).result["y"] == 9.0
    with pytest.raises(ValueError, match="unknown control"):
        Toy(gpus=3)


def test_failures_become_banners_and_instrument_survives():
    toy = Toy()
    toy.controls["x"].value = -1
    assert toy.failures == ["negative"] and "x is negative" in toy.banner.value
    toy.controls["mode"].value = "boom"
    assert toy.failures == ["instrument_error"] and toy.result == {}
    assert "ZeroDivisionError" in toy.last_traceback and "Traceback" not in toy.banner.value
    toy.controls["mode"].value = "invalid"
    assert toy.failures == ["invalid_input"] and "x must be &gt;= 0" in toy.banner.value
    toy.controls["mode"].value = "ok"
    toy.controls["x"].value = 4
    assert toy.failures == [] and toy.banner.value == "" and toy.result["y"] == 16
    assert toy.failures_seen == {"negative", "instrument_error", "invalid_input"}
    assert_alive(toy)


def test_batch_and_non_triggering_controls_update_once():
    toy = Toy()
    n = toy.update_count
    with toy.batch():
        toy.controls["x"].value = 1
        toy.controls["x"].value = 7
    assert toy.update_count == n + 1 and toy.result["y"] == 49
    toy.controls["preset"].value = "b"
    assert toy.update_count == n + 1


def test_gating_hides_and_disables():
    toy = Toy()
    toy.set_gated(True)
    assert toy.gated and toy.controls["x"].disabled
    toy.set_gated(False)
    assert not toy.gated and not toy.controls["x"].disabled


def test_mimebundle_is_a_widget_view():
    bundle = Toy()._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle


def test_record_to_ledger_and_hud(tmp_path):
    ledger = Ledger(tmp_path / "l.json")
    toy = Toy()
    toy.controls["x"].value = -2
    toy.controls["x"].value = 3
    toy.record("lab99/act2", ledger=ledger, prediction="B", correct=False)
    entry = ledger.get("lab99/act2")
    assert entry["configuration"]["x"] == 3 and entry["failures_hit"] == ["negative"]
    assert entry["result"]["y"] == 9
    hud = HudFooter("lab99/", ledger=ledger)
    assert hud.summary() == {"entries": 1, "predictions_locked": 1, "predictions_correct": 0,
                             "failures_hit": ["negative"]}
    assert "negative" in hud.widget.value


def test_hud_refreshes_itself_when_a_lock_below_it_writes_the_ledger(tmp_path):
    """The HUD sits above the locks: locking one (another Ledger object on the same file, as a lock
    makes its own) updates the HUD's line in place, with no re-run of its cell."""
    hud = HudFooter("lab99/", ledger=Ledger(tmp_path / "l.json"))
    assert "predictions locked 0" in hud.widget.value
    Ledger(tmp_path / "l.json").record("lab99/act1", {"prediction": "B"})
    assert "predictions locked 1" in hud.widget.value
    Ledger(tmp_path / "other.json").record("lab99/act2", {"prediction": "C"})  # another file: not counted
    assert "predictions locked 1" in hud.widget.value


def test_stakeholder_card_escapes_html():
    card = stakeholder_card("MLOps lead", "Ring <always> wins?", act="Act II")
    assert "&lt;always&gt;" in card.value and "Act II" in card.value


def test_helper_observers_never_raise():
    toy = Toy()
    toy.controls["preset"].value = "b"  # its handler raises: a banner, not a traceback
    assert toy.failures == ["instrument_error"] and "no such preset" in toy.banner.value
    assert "KeyError" in toy.last_traceback
    toy.controls["x"].value = 1  # the next update clears it
    assert toy.failures == []
