"""Charts that read in both themes and controls a screen reader can name (issue 24, deliverable 4).

* Mark colours: every mark of every instrument takes its colour from a theme
  variable, and each palette entry stands at least 4.5:1 against the chart
  backgrounds of the JupyterLab Light and Dark themes *as installed* (read from
  their style sheets, not copied here).
* Text alternatives: every figure has a description that names its title,
  says numbers, and changes when the data change.
* Log sliders: a control whose range spans two decades or more steps on a log
  scale (ArrowRight at 512 GPUs goes to 1,024, not 513), and still holds any
  whole number set from Python (a student's variant of 136 GPUs).
* Slider names: every instrument carries the widget that names its slider handles.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import bqplot as bq
import ipywidgets as widgets
import pytest

import course.instruments as instruments
from course.instruments import Instrument
from course.instruments.charts import describe_figure, legend_entries
from course.instruments.controls import LogIntSlider, ControlNames
from course.theme import MARK_COLORS, contrast_ratio, mark_color

THEMES = Path(sys.prefix) / "share" / "jupyter" / "lab" / "themes" / "@jupyterlab"
NAMED = {"white": "#ffffff", "black": "#000000"}

INSTRUMENT_CLASSES = [getattr(instruments, name) for name in instruments.__all__
                      if isinstance(getattr(instruments, name), type)
                      and issubclass(getattr(instruments, name), Instrument)
                      and getattr(instruments, name) is not Instrument]


@pytest.fixture(scope="module", params=INSTRUMENT_CLASSES, ids=lambda cls: cls.__name__)
def inst(request):
    return request.param()


def theme_variable(theme: str, name: str) -> str:
    """A colour variable of an installed JupyterLab theme, as #rrggbb (``var(--x, #fallback)`` -> fallback)."""
    css = (THEMES / f"theme-{theme}-extension" / "index.css").read_text()
    match = re.search(rf"{re.escape(name)}:\s*([^;}}]+)", css)
    assert match, f"{name} not in the {theme} theme"
    value = match.group(1).strip()
    fallback = re.search(r"#[0-9a-fA-F]{3,6}", value)
    value = NAMED.get(value, fallback.group(0) if fallback else value)
    assert re.fullmatch(r"#[0-9a-fA-F]{3}|#[0-9a-fA-F]{6}", value), f"{theme} {name} = {value!r}"
    return value


@pytest.mark.parametrize("theme, shade", [("light", 0), ("dark", 1)])
@pytest.mark.parametrize("background", ["--jp-layout-color0", "--jp-layout-color1"])
def test_every_mark_colour_reads_on_the_installed_theme(theme, shade, background):
    if not THEMES.exists():
        pytest.fail(f"JupyterLab's themes are not installed under {THEMES}")
    ground = theme_variable(theme, background)
    low = {name: round(contrast_ratio(pair[shade], ground), 2) for name, pair in MARK_COLORS.items()
           if contrast_ratio(pair[shade], ground) < 4.5}
    assert not low, f"mark colours under 4.5:1 on {theme} {background} ({ground}): {low}"


def colours_of(mark) -> list[str]:
    found = [c for c in (getattr(mark, "colors", None) or []) if isinstance(c, str)]
    stroke = getattr(mark, "stroke", None)
    return found + ([stroke] if isinstance(stroke, str) and stroke else [])


def test_every_mark_takes_its_colour_from_the_theme(inst):
    # GPU 0's group markers of the parallelism map sit on the map's own (viridis) cells, not on the
    # page, and the ring's grid is coloured by a colour scale: neither depends on the theme
    exempt = {id(m) for m in getattr(inst, "group_marks", {}).values()}
    fixed = [(type(mark).__name__, colour) for fig in inst.figures for mark in fig.marks if id(mark) not in exempt
             for colour in colours_of(mark) if not colour.startswith("var(--")]
    assert not fixed, f"{type(inst).__name__}: marks with a colour that ignores the theme: {fixed}"


def test_legends_sit_under_the_chart(inst):
    inside = [fig.title for fig in inst.figures for mark in fig.marks if mark.display_legend]
    assert not inside, f"{type(inst).__name__}: a legend drawn inside the plot covers curves: {inside}"
    for fig in inst.figures:
        legend = inst.figure_legends[id(fig)].value
        for label, _colour, _kind in legend_entries(getattr(fig, "_course_legend_marks", [])):
            assert label in legend


def test_every_chart_says_what_it_shows_in_words(inst):
    assert inst.figures
    for fig in inst.figures:
        text = inst.figure_texts[id(fig)].value
        assert "course-sr-only" in text  # read by a screen reader, not drawn twice
        assert f"Chart: {fig.title}" in text or (fig.title or "").split(" (")[0] in text
        assert re.search(r"\d", text), f"{fig.title}: no number in {text!r}"


def first_slider(inst) -> tuple[str, widgets.Widget]:
    for name, control in inst.controls.items():
        if isinstance(control, (widgets.IntSlider, widgets.FloatSlider, widgets.FloatLogSlider, LogIntSlider,
                                widgets.SelectionSlider)) and not control.disabled:
            return name, control
    raise AssertionError(f"{type(inst).__name__} has no slider")


def test_the_words_follow_the_data(inst):
    before = [inst.figure_texts[id(fig)].value for fig in inst.figures]
    name, control = first_slider(inst)
    original = control.value
    if isinstance(control, widgets.SelectionSlider):
        values = list(control._options_values)
        control.value = values[-1] if original != values[-1] else values[0]
    else:
        control.value = control.max if original != control.max else control.min
    try:
        after = [inst.figure_texts[id(fig)].value for fig in inst.figures]
        assert after != before, f"{type(inst).__name__}: moving {name} left every chart description as it was"
    finally:
        control.value = original


def test_a_description_is_built_from_the_marks_data():
    xs, ys = bq.LogScale(), bq.LinearScale()
    line = bq.Lines(x=[1, 8, 64], y=[55.0, 52.0, 38.0], labels=["model"], scales={"x": xs, "y": ys})
    point = bq.Scatter(x=[64], y=[38.0], labels=["selected N"], scales={"x": xs, "y": ys})
    fig = bq.Figure(marks=[line, point], title="MFU vs GPU count",
                    axes=[bq.Axis(scale=xs, label="GPUs"), bq.Axis(scale=ys, label="MFU (%)", side="left")])
    text = describe_figure(fig)
    assert text.startswith("Chart: MFU vs GPU count.")
    assert "GPUs (log scale)" in text and "MFU (%)" in text
    assert "model: 55 at GPUs = 1 to 38 at 64" in text
    assert "selected N at (GPUs, MFU) = (64, 38)" in text
    line.y = [55.0, 40.0, 20.0]
    assert "to 20 at 64" in describe_figure(fig)


def test_sliders_over_decades_are_log_scaled(inst):
    linear = []
    for name, control in inst.controls.items():
        if isinstance(control, (widgets.IntSlider, widgets.FloatSlider)) and control.min > 0 \
                and control.max / control.min >= 100:
            linear.append((name, control.min, control.max))
    assert not linear, f"{type(inst).__name__}: linear sliders over two decades or more: {linear}"


def test_log_slider_steps_through_powers_of_two_and_holds_any_whole_number():
    slider = LogIntSlider(value=512, min=2, max=4096, description="GPUs N")
    stops = slider.stops
    assert stops[stops.index(512) + 1] == 1024 and stops[stops.index(512) - 1] == 256  # ArrowRight / ArrowLeft
    assert len(stops) == 12  # 2 ... 4096: a drag from 8 to 4096 crosses 9 stops, not 4088
    slider.value = 136  # a student's variant
    assert slider.value == 136 and slider.label == "136"
    slider.max = 10_000  # the Edge track's fleet
    slider.value = 10_000
    assert slider.value == 10_000 and slider.label == "10,000"
    with pytest.raises(Exception, match="whole number"):
        slider.value = 1


def test_comparator_n_slider_is_logarithmic():
    comparator = instruments.AllreduceComparator(gpus=512)
    gpus = comparator.controls["gpus"]
    assert isinstance(gpus, LogIntSlider)
    gpus.index += 1  # what ArrowRight does in the browser
    assert gpus.value == 1024 and comparator.result["gpus"] == 1024


def test_every_instrument_names_its_slider_handles(inst):
    names = [w for w in walk(inst.widget) if isinstance(w, ControlNames)]
    assert len(names) == 1
    assert all(control.description for control in inst.controls.values()
               if isinstance(control, (widgets.IntSlider, widgets.FloatSlider, widgets.FloatLogSlider,
                                       widgets.SelectionSlider)))


def walk(widget):
    yield widget
    for child in getattr(widget, "children", ()) or ():
        yield from walk(child)


def test_explorer_opens_in_a_working_state():
    explorer = instruments.ScalingExplorer(params_b=7, gpus=512)  # Lab 05 Act I's cell
    assert explorer.failures == []
    assert explorer.result["inter_link"] == "InfiniBand NDR"


def test_mark_color_rejects_an_unknown_name():
    assert mark_color("blue") == "var(--course-mark-blue)"
    with pytest.raises(ValueError, match="name"):
        mark_color("chartreuse")


def test_a_track_the_instrument_cannot_model_shows_no_numbers():
    from course.core import catalog

    explorer = instruments.ScalingExplorer()
    explorer.apply_track(catalog.TRACKS["Edge"])
    assert "track_not_modelled" in explorer.failures
    hidden = [box.layout.display for box in explorer._readouts]
    assert hidden == ["none"] * len(explorer._readouts), "Cloud's cards and charts still show under the banner"
    assert all("No data" in explorer.figure_texts[id(fig)].value for fig in explorer.figures)
    explorer.apply_track(None)
    assert [box.layout.display for box in explorer._readouts] == [None] * len(explorer._readouts)
    assert explorer.failures == []


@pytest.mark.parametrize("module", ["course.theme", "course.instruments.charts", "course.instruments.controls",
                                    "course.instruments.allreduce"])
def test_the_examples_in_the_docstrings_hold(module):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
