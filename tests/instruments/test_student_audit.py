"""Defects a student audit found in the instruments, one test (or a few) each.

1. The configurator showed MFU, step time and throughput for a layout with no valid DP (DP = 85, "not whole").
2. Lab 06's dashboard wrote the core's code names ("double_binary_tree", "recursive_doubling→rabenseifner").
3. The explorer's legend drew every scatter mark as a dot (the chart draws a cross and a diamond).
4. Lab 05's explorer showed the hierarchical all-reduce (124 ms) unlabelled while the graded question asks for a
   ring all-reduce (564 ms).
5. H100 memory read "85.5 GB" in the configurator and "80 GB" in the explorer.
6. After arrow presses on the comparator's M slider the time axis read "1e-1, 1e+1" beside "1 s": bqplot drew
   new tick values with the old label table.
7. A number typed into the M (GB) or checkpoint readout did nothing since they became selection sliders.

Expected numbers come from ``course.core`` and the catalog, never from the instrument under test.
"""

from __future__ import annotations

import html
import re

import bqplot as bq
import pytest

from course import core
from course.core import catalog, units
from course.instruments import AlgorithmDashboard, AllreduceComparator, Configurator, ScalingExplorer, SyncAudit
from course.instruments.base import fmt_time
from course.instruments.charts import js_number_key, legend_entries, legend_html

from .test_accessibility import INSTRUMENT_CLASSES

GB = units.GB


def text_of(markup: str) -> str:
    """What a student reads: tags dropped, entities decoded, spaces collapsed."""
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", markup))).strip()


def card_text(inst, name: str) -> str:
    match = re.search(rf"course-card-{name}'>(.*?)</div></div>", inst.cards.value, re.S)
    assert match, f"no card {name}"
    return text_of(match.group(1))


# -- 1. an invalid layout shows its failure, not numbers ---------------------------------------------------------
@pytest.mark.parametrize("tp, pp", [(4, 3), (8, 3), (2, 5)])
def test_an_invalid_layout_shows_dashes_not_mfu_step_or_throughput(tp, pp):
    conf = Configurator(model="gpt3-175b", cluster="h100-1024", tp=tp, pp=pp)
    gpus = catalog.cluster("h100-1024").gpus
    assert gpus % (tp * pp), "the case must leave GPUs without a place"
    assert "gpus_mismatch" in conf.failures and "instrument_error" not in conf.failures
    for name in ("mfu", "step", "throughput"):
        shown = card_text(conf, name)
        assert "—" in shown and not re.search(r"\d", shown.split("—")[0] + shown.split("—")[1][:3]), \
            f"{name} card shows a number for an invalid layout: {shown!r}"
    assert conf.result["mfu"] is None and conf.result["step_seconds"] is None
    assert conf.result["tokens_per_second"] is None
    assert not any(conf.step_bars.y), "the step-time chart draws a step for an invalid layout"
    peek = text_of(conf.math_peek.value)
    assert not re.search(r"MFU = .*\d %", peek) and "invalid" in peek
    assert "Traceback" not in conf.banner.value
    # a valid layout (Lab 05's design answer: TP 8, PP 8, ZeRO-1, selective recompute) shows its numbers again
    with conf.batch():
        conf.controls["tp"].value, conf.controls["pp"].value = 8, 8
    assert conf.failures == []
    assert "gpus_mismatch" not in conf.failures
    assert "range" in card_text(conf, "mfu") and "%" in card_text(conf, "mfu")  # the card shows MFU with its range (issue 46)
    assert conf.result["mfu"] > 0 and any(conf.step_bars.y)


# -- 2. human names on the dashboard -------------------------------------------------------------------------------
CODE_NAME = re.compile(r"double_binary_tree|recursive_doubling|rabenseifner|\w→|→\w")


@pytest.mark.parametrize("gpus", [8, 128, 1024])
@pytest.mark.parametrize("message_gb", [1e-6, 5e-4, 0.1, 14.0, 350.0])
def test_the_dashboard_writes_algorithm_names_for_people(gpus, message_gb):
    dash = AlgorithmDashboard(gpus=gpus, message_gb=message_gb, compute_s=1e-3)
    shown = " ".join(text_of(w.value) for w in (dash.cards, dash.banner, dash.math_peek))
    assert not CODE_NAME.search(shown), CODE_NAME.findall(shown)


def test_the_dashboard_names_its_crossovers_as_words():
    dash = AlgorithmDashboard(gpus=128)
    pairs = [(c["from"], c["to"]) for c in dash.result["crossovers"]]
    assert ("recursive_doubling", "rabenseifner") in pairs, pairs  # the case the audit saw
    assert "recursive doubling → Rabenseifner" in card_text(dash, "crossover")


# -- 3. legend swatches are the marks ------------------------------------------------------------------------------
def legend_cases():
    for cls in INSTRUMENT_CLASSES:
        inst = cls()
        for fig in inst.figures:
            for mark in getattr(fig, "_course_legend_marks", []):
                yield pytest.param(inst, fig, mark, id=f"{cls.__name__}-{fig.title}-{(mark.labels or ['?'])[0]}")


@pytest.mark.parametrize("inst, fig, mark", list(legend_cases()))
def test_each_legend_swatch_draws_its_mark(inst, fig, mark):
    entries = legend_entries([mark])
    drawn = inst.figure_legends[id(fig)].value
    for i, (label, colour, kind) in enumerate(entries):
        assert colour == mark.colors[i % len(mark.colors)]
        if isinstance(mark, bq.Scatter):
            assert kind == mark.marker, f"{label}: the chart draws a {mark.marker}, the legend a {kind}"
        elif isinstance(mark, bq.Lines) and mark.fill != "none":  # a filled path (bars drawn as one) is a box
            assert kind == "box", f"{label}: the chart draws a filled area, the legend a {kind}"
        elif isinstance(mark, bq.Lines):
            assert kind == ("dashed" if mark.line_style != "solid" else "line")
        # the swatch in the page: the same shape, the same colour (and the mark's outline, if it has one)
        item = re.search(rf"<span class='course-legend-item'>(<svg.*?</svg>){re.escape(html.escape(label))}</span>",
                         drawn, re.S)
        assert item, f"{label}: no drawn swatch in {drawn[:300]}"
        svg = item.group(1)
        assert f"course-legend-{kind}" in svg and html.escape(colour, quote=True) in svg
        if isinstance(mark, bq.Scatter) and mark.stroke:
            assert html.escape(mark.stroke, quote=True) in svg
        if kind == "dashed":
            assert "stroke-dasharray" in svg


def test_the_explorers_cross_and_diamond_are_in_its_legend():
    explorer = ScalingExplorer()
    drawn = legend_html(explorer.figures[0]._course_legend_marks)
    assert "course-legend-cross" in drawn and "course-legend-diamond" in drawn


# -- 4. the explorer says which all-reduce it shows ---------------------------------------------------------------
def test_lab05_explorer_labels_the_hierarchical_time_and_shows_the_ring_too():
    explorer = ScalingExplorer(params_b=7, gpus=512)  # Lab 05 Act I, as the notebook builds it
    link = catalog.link("InfiniBand NDR")
    ring = float(core.allreduce_time(7e9 * 2, 512, link.bandwidth, link.latency, algorithm="ring"))
    assert fmt_time(ring) == "564 ms"
    comm = card_text(explorer, "comm")
    assert "hierarchical" in comm.lower() and fmt_time(explorer.result["comm_seconds"]) in comm
    assert "ring" not in comm.lower().replace("hierarchical", "")  # 124 ms is not called a ring
    flat = card_text(explorer, "ring")
    assert "ring" in flat.lower() and "564 ms" in flat and link.name in flat
    assert explorer.result["ring_seconds"] == pytest.approx(ring, rel=1e-12)
    # inside one node the all-reduce is a ring on NVLink, and the card says so
    explorer.controls["gpus"].value = 8
    assert "ring" in card_text(explorer, "comm").lower() and "NVLink" in card_text(explorer, "comm")


# -- 5. one memory capacity, written the same way ------------------------------------------------------------------
def test_explorer_and_configurator_write_the_h100_memory_the_same_way():
    # issue 36: one capacity, one unit: the bytes NVML reports (81,559 MiB), in GB = 10^9 bytes; the
    # vendor's "80 GB" appears only where the math peek explains it
    h100 = catalog.accelerator("H100")
    assert h100.memory_bytes == 81_559 * 2**20 and h100.memory_marketed_gb == 80
    explorer, conf = ScalingExplorer(), Configurator()
    assert "of 85.5 GB" in card_text(explorer, "memory") and "of 85.5 GB" in card_text(conf, "memory")
    for inst in (explorer, conf):
        cards = text_of(inst.cards.value)
        assert "80 GB" not in cards and "e9 bytes" not in cards and "GiB" not in cards, cards
        peek = text_of(inst.math_peek.value)
        assert 'sold as "80 GB"' in peek and "85.5 GB" in peek, peek
    assert "85.5 GB" in conf.capacity.labels[0]
    # both judge out of memory against the same line: what a training process can allocate
    assert explorer.result["memory_bytes"] == conf.result["memory_capacity"] == h100.memory_capacity


# -- 6. tick labels arrive before the ticks ------------------------------------------------------------------------
def test_every_tick_value_has_its_label_when_it_arrives():
    comparator = AllreduceComparator(gpus=128, message_gb=14)
    axis = comparator.time_axis
    missing = []

    def check(change):  # bqplot redraws the axis on `tick_values` with the labels it holds at that moment
        keys = axis.tick_labels or {}
        missing.extend(v for v in change["new"] if js_number_key(v) not in keys)

    axis.observe(check, names="tick_values")
    m = comparator.controls["message_gb"]
    stops = m.stops
    for value in stops[stops.index(14.0):stops.index(40.0) + 1] + stops[stops.index(40.0)::-5]:
        m.value = value  # arrow presses up to 40 GB, then down in larger jumps
    assert not missing, f"ticks drawn before their labels: {sorted(set(missing))}"
    m.value = 40.0
    assert all(js_number_key(v) in axis.tick_labels for v in axis.tick_values)
    labels = [axis.tick_labels[js_number_key(v)] for v in axis.tick_values]
    assert not any("e" in label.replace("µs", "").replace("s", "") for label in labels), labels


# -- 7. typed entry on log float sliders ---------------------------------------------------------------------------
@pytest.mark.parametrize("make, name", [(AllreduceComparator, "message_gb"), (SyncAudit, "checkpoint_s"),
                                        (AlgorithmDashboard, "message_gb")])
def test_a_typed_number_becomes_a_held_stop(make, name):
    inst = make()
    slider = inst.controls[name]
    before = inst.update_count
    slider.entry.value = "37.5"
    assert slider.value == 37.5 and 37.5 in slider.stops and slider.label == "37.5"
    assert inst.update_count > before and slider.entry.value == "37.5" and not slider.entry_message
    slider.entry.value = " 1,000 "  # thousands separators as the readout writes them
    assert slider.value == min(1000.0, slider.stops[-1])


def test_typed_entry_clamps_refuses_nonsense_and_follows_the_handle():
    comparator = AllreduceComparator()
    m = comparator.controls["message_gb"]
    m.entry.value = "5000"
    assert m.value == 1000.0 and m.entry.value == "1,000" and "1,000" in m.entry_message
    for bad in ("big", "-3", "0", "nan", "1e999", ""):
        m.entry.value = bad
        assert m.value == 1000.0, bad
        assert m.entry.value == "1,000" and m.entry_message and "Traceback" not in m.entry_message
        assert m.entry_message in text_of(m.note.value)
    assert "instrument_error" not in comparator.failures
    m.value = 14.0  # the handle (or code) moves the value: the entry follows, the message goes
    assert m.entry.value == "14" and not m.entry_message and text_of(m.note.value) == ""


def test_a_typed_stop_that_crowds_out_the_current_one_is_shown():
    """At 40 GB, 37.5 typed replaces the 40 stop (within 10 %): the index stays, the value and every readout move."""
    m = AllreduceComparator(message_gb=40).controls["message_gb"]
    index = m.index
    m.entry.value = "37.5"
    assert m.value == 37.5 and 40.0 not in m.stops and m.index == index
    assert m.label == "37.5" and m.entry.value == "37.5" and m._options_labels[m.index] == "37.5"
