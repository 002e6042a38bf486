"""Sliders a keyboard user can move: one arrow press is a visible step, presets are stops (student trial).

A keyboard-only student pressed ArrowRight on the all-reduce comparator's M slider: 350 GB became 351 GB
(the dashboard) and 97.9 s became 98.2 s (the audit's checkpoint), and the readout did not change. The
sliders stepped 0.001 of a decade, ~1,000 presses per decade, so that 140 GB landed on a step.

What one press does is worked out here from the widget's own traits, the way the browser does it:
noUiSlider moves a FloatLogSlider by ``step`` in the exponent and a selection slider (LogIntSlider,
LogFloatSlider, SelectionSlider) by one option. The presets and story numbers come from the labs'
declarations and the dashboard's preset list, never from the slider under test.
"""

from __future__ import annotations

import math
import re
import random

import ipywidgets as widgets
import numpy as np
import pytest

import course.instruments as instruments
from course.core import catalog, memory, units
from course.instruments import AlgorithmDashboard, AllreduceComparator, SyncAudit
from course.instruments.controls import LogFloatSlider, log_series, stop_label
from course.instruments.workloads import WORKLOADS
from course.labs import lab05, lab06

from .test_accessibility import INSTRUMENT_CLASSES

GB = units.GB
#: one arrow press must change the value by at least 5 % ...
MIN_PRESS = 1.05
#: ... and a decade must take at most 30 presses
MAX_PRESSES_PER_DECADE = 30


def keyboard_values(control) -> list[float] | None:
    """Every value the arrow keys can reach, in order; ``None`` for a control that is not a numeric slider."""
    if isinstance(control, widgets.FloatLogSlider):  # noUiSlider steps the exponent by `step`
        steps = round((control.max - control.min) / control.step)
        return [control.base ** (control.min + k * control.step) for k in range(steps + 1)]
    if isinstance(control, widgets.SelectionSlider):
        values = list(control._options_values)
        return values if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values) else None
    return None


def log_sliders():
    """(instrument class, control name) of every slider that spans a decade or more through positive values."""
    found = []
    for cls in INSTRUMENT_CLASSES:
        inst = cls()
        for name, control in inst.controls.items():
            values = keyboard_values(control)
            if values and min(values) > 0 and max(values) / min(values) >= 10:
                found.append(pytest.param(cls, name, id=f"{cls.__name__}.{name}"))
    return found


LOG_SLIDERS = log_sliders()


def test_the_sliders_of_the_trial_are_among_those_checked():
    ids = {p.id for p in LOG_SLIDERS}
    assert {"AllreduceComparator.message_gb", "AlgorithmDashboard.message_gb", "AlgorithmDashboard.compute_s",
            "SyncAudit.checkpoint_s", "AllreduceComparator.gpus", "SyncAudit.workers"} <= ids


@pytest.mark.parametrize("cls, name", LOG_SLIDERS)
def test_every_arrow_press_on_a_log_slider_is_a_visible_step(cls, name):
    control = cls().controls[name]
    values = keyboard_values(control)
    ratios = [b / a for a, b in zip(values, values[1:])]
    small = [(a, b) for a, b, r in zip(values, values[1:], ratios) if r < MIN_PRESS]
    assert not small, f"{cls.__name__}.{name}: presses of under 5 % ({len(small)} of {len(ratios)}): {small[:3]}"
    per_decade = len(ratios) / math.log10(values[-1] / values[0])
    assert per_decade <= MAX_PRESSES_PER_DECADE, f"{cls.__name__}.{name}: {per_decade:.0f} presses per decade"
    # the readout says each value differently
    if isinstance(control, widgets.SelectionSlider):
        labels = list(control._options_labels)
        assert len(set(labels)) == len(labels), f"{cls.__name__}.{name}: two stops read the same: {labels}"


def press(control, key: str = "ArrowRight") -> None:
    """What one arrow press in the browser does to the model."""
    if isinstance(control, widgets.SelectionSlider):
        control.index = min(max(control.index + (1 if key == "ArrowRight" else -1), 0), len(control.options) - 1)
    else:  # pragma: no cover - no FloatLogSlider is left; kept so the test states the browser's rule
        exponent = math.log(control.value, control.base) + (control.step if key == "ArrowRight" else -control.step)
        control.value = control.base ** exponent


@pytest.mark.parametrize("cls", [AllreduceComparator, AlgorithmDashboard])
def test_arrow_right_on_m_moves_the_readout_and_the_numbers(cls):
    inst = cls()
    m = inst.controls["message_gb"]
    before, label, seconds = m.value, m.label, inst.result["message_bytes"]
    press(m)
    assert m.value / before >= MIN_PRESS and m.label != label
    assert inst.result["message_bytes"] == pytest.approx(m.value * GB, rel=1e-12) and m.value * GB != seconds
    press(m, "ArrowLeft")
    assert (m.value, m.label) == (before, label)


def test_a_decade_of_m_takes_a_handful_of_presses():
    comparator = AllreduceComparator(message_gb=14)
    m = comparator.controls["message_gb"]
    presses = 0
    while m.value < 140:
        press(m)
        presses += 1
    assert m.value == 140 and m.label == "140" and presses <= 10


def test_checkpoint_from_98_s_one_press_each_way():
    audit = SyncAudit()
    ckpt = audit.controls["checkpoint_s"]
    assert (ckpt.value, ckpt.label) == (98.0, "98")
    press(ckpt)
    assert ckpt.value >= 98 * MIN_PRESS and audit.result["checkpoint_seconds"] == ckpt.value
    press(ckpt, "ArrowLeft")
    press(ckpt, "ArrowLeft")
    assert ckpt.value <= 98 / MIN_PRESS and ckpt.label == stop_label(ckpt.value)


# -- presets and story numbers are stops, held and shown exactly ---------------------------------------

def assert_stop(control, value: float, shown: str) -> None:
    values = keyboard_values(control)
    assert any(v == value for v in values), f"{control.description}: {value!r} is no stop near {values[:3]}"
    control.value = value
    assert control.value == value and control.label == shown


@pytest.mark.parametrize("cls", [AllreduceComparator, AlgorithmDashboard])
@pytest.mark.parametrize("gb, shown", [(140.0, "140"), (350.0, "350"), (14.0, "14"), (0.0005, "0.0005")])
def test_m_presets_are_stops_of_the_slider(cls, gb, shown):
    assert_stop(cls().controls["message_gb"], gb, shown)


def test_dashboard_presets_select_their_stop_and_stay_presets():
    dashboard = AlgorithmDashboard()
    for preset, message_bytes in WORKLOADS.items():
        dashboard.controls["workload"].value = preset
        m = dashboard.controls["message_gb"]
        assert m.value == message_bytes / GB and m.value in keyboard_values(m)
        assert dashboard.controls["workload"].value == preset  # the slider did not move off it
        assert dashboard.result["message_bytes"] == pytest.approx(message_bytes, rel=1e-12)


def test_the_comparator_opens_on_140_gb():
    m = AllreduceComparator().controls["message_gb"]
    assert (m.value, m.label) == (140.0, "140")


def test_every_checkpoint_time_of_lab05_is_a_stop():
    times = {lab05.SPEC["checkpoint_seconds"]}
    for seed in range(200):  # the lab's own variant draw
        times.add(lab05.vary(dict(lab05.SPEC), random.Random(seed))["checkpoint_seconds"])
    assert len(times) >= 3
    ckpt = SyncAudit().controls["checkpoint_s"]
    for seconds in sorted(times):
        assert_stop(ckpt, seconds, f"{seconds:g}")


def test_every_worker_count_of_lab05_is_a_stop_read_with_separators():
    counts = {lab05.SPEC["workers"]}
    for seed in range(200):
        counts.add(lab05.vary(dict(lab05.SPEC), random.Random(seed))["workers"])
    workers = SyncAudit().controls["workers"]
    for n in sorted(counts):
        assert_stop(workers, n, f"{n:,}")


def test_lab06_act2_updates_set_from_code_are_held_and_shown_exactly():
    dashboard = AlgorithmDashboard()
    m = dashboard.controls["message_gb"]
    for message_bytes in lab06.ACT2_BYTES:  # the cell sets `message_gb = act2_bytes / GB`
        m.value = message_bytes / GB
        assert m.value == message_bytes / GB and m.value in keyboard_values(m)
        assert dashboard.result["message_bytes"] == pytest.approx(message_bytes, rel=1e-12)
        assert m.label == np.format_float_positional(message_bytes / GB, trim="-")


def test_lab06_act2_prompt_names_m_as_the_slider_reads_it():
    m = AlgorithmDashboard().controls["message_gb"]
    for message_bytes in lab06.ACT2_BYTES:
        m.value = message_bytes / GB
        prompt = lab06._act2_prompt(dict(lab06.SPEC, act2_bytes=message_bytes))
        assert f"{m.label} GB on the dashboard's slider" in prompt, (m.label, prompt[:160])


@pytest.mark.parametrize("track", ["Edge", "Mobile", "Tiny"])
def test_a_tracks_gradient_is_a_stop_with_visible_neighbours(track):
    comparator = AllreduceComparator()
    comparator.apply_track(catalog.TRACKS[track])
    model = catalog.TRACKS[track].model
    gb = float(model.params) * memory.precision_bytes("fp32") / GB
    m = comparator.controls["message_gb"]
    assert m.value == gb and m.label == np.format_float_positional(gb, trim="-")
    i = m.index
    assert m.stops[i + 1] / gb >= MIN_PRESS and gb / m.stops[i - 1] >= MIN_PRESS
    comparator.apply_track(catalog.TRACKS["Cloud"])
    assert (m.value, m.label) == (140.0, "140")


def test_a_number_set_from_code_is_held_until_the_next_one():
    m = AllreduceComparator().controls["message_gb"]
    base = len(m.stops)
    m.value = 14.1  # a student's variant
    assert m.value == 14.1 and m.label == "14.1" and len(m.stops) == base + 1
    m.value = 0.0042
    assert 14.1 not in m.stops and 0.0042 in m.stops and len(m.stops) <= base + 1
    m.value = 14  # a preset: no new stop
    assert m.value == 14.0 and m.label == "14"


def test_out_of_range_is_clamped_and_nonsense_refused():
    m = AllreduceComparator().controls["message_gb"]
    m.value = 5000
    assert m.value == 1000.0 and m.label == "1,000"
    m.value = 1e-9
    assert m.value == 1e-6
    for bad in ("big", float("nan"), -1.0, 0, True):
        with pytest.raises(Exception, match="value must be a positive number"):
            m.value = bad
    with pytest.raises(Exception):  # noqa: B017 - traitlets refuses None before any validator sees it
        m.value = None
    assert m.value == 1e-6


def test_log_series_and_labels():
    assert log_series(1, 10) == (1.0, 1.4, 2.0, 3.0, 4.0, 5.0, 7.0, 10.0)
    assert stop_label(1400.0) == "1,400" and stop_label(2e-5) == "0.00002"
    with pytest.raises(ValueError, match="low and high"):
        log_series(10, 1)
    slider = LogFloatSlider(value=98.0, min=1.0, max=3000.0, presets=(98.0, 49.0))
    assert 100.0 not in slider.stops and 50.0 not in slider.stops  # 2 % and 2 % from a preset: one press each
    assert slider.stops[slider.stops.index(49.0) - 1] == 40.0


# -- counts read with thousands separators -----------------------------------------------------------

@pytest.mark.parametrize("cls", INSTRUMENT_CLASSES, ids=lambda cls: cls.__name__)
def test_every_count_slider_reads_with_thousands_separators(cls):
    inst = cls()
    for name, control in inst.controls.items():
        if isinstance(control, widgets.SelectionSlider) and not isinstance(control, LogFloatSlider):
            values, labels = list(control._options_values), list(control._options_labels)
            # a message size in bytes is not a count: it reads with its unit ("4.1 kB"), every label one
            sizes = all(label.endswith("B") for label in labels)
            if all(isinstance(v, int) and not isinstance(v, bool) for v in values) and not sizes:
                assert list(control._options_labels) == [f"{v:,}" for v in values], f"{cls.__name__}.{name}"
        elif isinstance(control, widgets.IntSlider) and control.max >= 1000:
            assert "," in control.readout_format, f"{cls.__name__}.{name}: {control.max} read without a separator"


def test_the_gpu_count_readouts_agree():
    labels = {AllreduceComparator(gpus=1024).controls["gpus"].label, SyncAudit().controls["workers"].label,
              instruments.ScalingExplorer(gpus=1024).controls["gpus"].label}
    assert labels == {"1,024"}


@pytest.mark.parametrize("make", [lambda: AllreduceComparator(gpus=1024), lambda: AlgorithmDashboard(gpus=1024),
                                  lambda: SyncAudit(workers=1024), lambda: instruments.ScalingExplorer(gpus=1024),
                                  lambda: instruments.Configurator()],
                         ids=["comparator", "dashboard", "audit", "explorer", "configurator"])
def test_cards_math_and_chart_words_write_1024_gpus_with_a_separator(make):
    inst = make()
    texts = [inst.cards.value, inst.math_peek.value, *(t.value for t in inst.figure_texts.values())]
    unseparated = [m.group(0) for text in texts for m in re.finditer(r"(?<![\d,.#])10[0-9]{2}(?![\d.])", text)]
    assert not unseparated, f"{type(inst).__name__}: counts without a separator: {unseparated}"
    assert any("1,02" in text for text in texts)
