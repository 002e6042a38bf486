"""3D-parallelism configurator: banners exactly where plan() says infeasible, numbers equal plan()'s."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from course import core
from course.core import catalog


from course.instruments.configurator import (
    BUBBLE_MICROBATCHES, CLUSTER_CHOICES, MEMORY_PARTS, MODEL_CHOICES, PP_GRID, TP_CHOICES, Configurator)

from .helpers import assert_alive, changed, mark_arrays, same_figures


@pytest.fixture(scope="module")
def conf():
    return Configurator()


def set_controls(inst, **values):
    with inst.batch():
        for name, value in values.items():
            inst.controls[name].value = value


def expected_plan(v):
    cluster = catalog.cluster(v["cluster"])
    dp = max(cluster.gpus // (v["tp"] * v["cp"] * v["pp"]), 1)
    return dp, core.plan(v["model"], v["cluster"], tp=v["tp"], cp=v["cp"], pp=v["pp"], dp=dp,
                         num_microbatches=v["microbatches"], micro_batch=v["micro_batch"], interleave=v["interleave"],
                         sequence_parallel=v["sequence_parallel"], zero_stage=v["zero_stage"],
                         recompute=v["recompute"])


def _check(conf):
    """Banners are exactly the planner's violations; shown numbers are the plan's."""
    assert_alive(conf)
    v = conf.values()
    try:
        dp, p = expected_plan(v)
    except ValueError as exc:  # the planner refuses the input outright (e.g. more stages than layers)
        assert conf.failures == ["invalid_input"] and str(exc) in conf.failure_messages["invalid_input"]
        return
    assert conf.failures == [code for code, _ in p.violations]
    for code, sentence in p.violations:
        assert conf.failure_messages[code] == sentence
    r = conf.result
    assert r["dp"] == dp
    assert r["feasible"] == p.feasible
    assert r["memory_total"] == pytest.approx(p.memory_total, rel=1e-12)
    if any(code not in ("out_of_memory", "tp_crosses_node") for code, _ in p.violations):
        # an invalid layout (GPUs without a place, heads or batch that do not divide): no step to show
        assert r["mfu"] is None and r["step_seconds"] is None and r["tokens_per_second"] is None
        assert not any(conf.step_bars.y)
    else:
        assert r["mfu"] == pytest.approx(p.mfu, rel=1e-12)
        assert r["step_seconds"] == pytest.approx(p.step_time, rel=1e-12)
    bars = np.array(conf.memory_bars.y)[:, 0] * 1e9
    np.testing.assert_allclose(bars, [getattr(p, part) for part in MEMORY_PARTS], rtol=1e-12)
    assert r["bubble_fraction"] == pytest.approx(core.bubble_fraction(v["pp"], v["microbatches"], v["interleave"]))


def test_lab05_design_answer_is_feasible_and_tp16_crosses_a_node(conf):
    set_controls(conf, model="gpt3-175b", cluster="h100-1024", tp=8, pp=8, microbatches=32, zero_stage=1,
                 recompute="selective")
    _check(conf)
    assert conf.result["dp"] == 16
    assert conf.failures == []
    conf.controls["tp"].value = 16
    _check(conf)
    assert "tp_crosses_node" in conf.failures


def test_lab05_model_of_10_bytes_per_param_is_not_what_is_shown(conf):
    # TP=8, PP=4, DP=32 for GPT-3: plan() counts 16 B/param of model state plus activations (errata 5).
    set_controls(conf, model="gpt3-175b", cluster="h100-1024", tp=8, pp=4, microbatches=32, zero_stage=0,
                 recompute="none")
    _check(conf)
    state = sum(conf.result["memory"][k] for k in ("weights", "gradients", "optimizer"))
    assert state == pytest.approx(16 * 175e9 / 32)  # 87.5 GB of weights, gradients and Adam states alone
    assert "out_of_memory" in conf.failures


def test_invalid_tp_pp_product_is_reported_with_the_planner_sentence(conf):
    set_controls(conf, model="llama3-70b", cluster="h100-1024", tp=8, pp=3, microbatches=12)
    _check(conf)
    assert "gpus_mismatch" in conf.failures
    assert "1024" in conf.failure_messages["gpus_mismatch"]
    assert "not whole" in conf._cards["dp"].value


def test_bubble_chart_is_the_core_formula(conf):
    set_controls(conf, pp=8, microbatches=12)
    lines = np.array(conf.bubble_lines.y)
    assert lines.shape == (len(BUBBLE_MICROBATCHES) + 1, PP_GRID.size)
    for row, m in zip(lines, BUBBLE_MICROBATCHES + (12,)):
        np.testing.assert_allclose(row, 100 * (PP_GRID - 1) / (m + PP_GRID - 1), rtol=1e-12)  # by hand
    assert list(conf.ceiling.y) == [10.0, 10.0]
    assert list(conf.bubble_point.x) == [8]


def test_marks_change_in_the_same_figure(conf):
    set_controls(conf, model="gpt3-175b", cluster="h100-1024", tp=8, pp=8, microbatches=32)
    figs, marks = list(conf.figures), [m for f in conf.figures for m in f.marks]
    before = mark_arrays(conf)
    conf.controls["pp"].value = 4
    assert same_figures(conf, figs, marks)
    assert changed(before, mark_arrays(conf))


def test_grid_never_escapes(conf):
    for model, tp, pp, zero, rc in itertools.product(("gpt3-175b", "llama3-8b"), (1, 8, 64), (1, 7, 64), (0, 3),
                                                     ("none", "full")):
        set_controls(conf, model=model, tp=tp, pp=pp, zero_stage=zero, recompute=rc, microbatches=8)
        _check(conf)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(model=st.sampled_from(MODEL_CHOICES), cluster=st.sampled_from(CLUSTER_CHOICES), tp=st.sampled_from(TP_CHOICES),
       pp=st.integers(1, 64), m=st.integers(1, 64), zero=st.sampled_from([0, 1, 2, 3]),
       rc=st.sampled_from(["none", "selective", "full"]), best=st.booleans(),
       cp=st.sampled_from([1, 2, 4, 8, 16]), v=st.sampled_from([1, 2, 4]), b=st.sampled_from([1, 2, 4, 8]),
       sp=st.booleans())
def test_fuzz(conf, model, cluster, tp, pp, m, zero, rc, best, cp, v, b, sp):
    set_controls(conf, model=model, cluster=cluster, tp=tp, pp=pp, microbatches=m, zero_stage=zero, recompute=rc,
                 show_best=best, cp=cp, interleave=v, micro_batch=b, sequence_parallel=sp)
    _check(conf)


def test_top_five_are_the_sweeps_best_feasible_rows(conf):
    set_controls(conf, model="gpt3-175b", cluster="h100-1024", show_best=True)
    best = conf.result["best"]
    top = core.sweep("gpt3-175b", "h100-1024").top(5)
    assert [(r["tp"], r["pp"], r["dp"]) for r in best] == [(int(a), int(b), int(c)) for a, b, c in
                                                           zip(top["tp"], top["pp"], top["dp"])]
    assert len(best) == 5 and all(r["tp"] <= 8 for r in best)
    assert [r["tokens_per_second"] for r in best] == sorted((r["tokens_per_second"] for r in best), reverse=True)
    # each listed configuration is feasible for plan() too
    for r in best:
        p = core.plan("gpt3-175b", "h100-1024", tp=r["tp"], cp=r["cp"], pp=r["pp"], dp=r["dp"],
                      interleave=r["interleave"], micro_batch=r["micro_batch"],
                      num_microbatches=r["microbatches"], zero_stage=r["zero_stage"], recompute=r["recompute"],
                      sequence_parallel=r["sequence_parallel"])
        assert p.feasible, p.violations
    assert "top 5" in conf.best_table.value and "#1 beats #2 because" in conf.best_table.value
    # loading #2 puts its configuration into the controls and shows exactly its plan
    conf.controls["load_best"].value = 1
    second = best[1]
    r = conf.result
    assert (r["tp"], r["cp"], r["pp"], r["dp"], r["interleave"], r["micro_batch"], r["microbatches"],
            r["zero_stage"], r["recompute"], r["sequence_parallel"]) == (
        second["tp"], second["cp"], second["pp"], second["dp"], second["interleave"], second["micro_batch"],
        second["microbatches"], second["zero_stage"], second["recompute"], second["sequence_parallel"])
    assert r["tokens_per_second"] == pytest.approx(second["tokens_per_second"], rel=1e-12)
    assert r["feasible"] and conf.failures == []
    conf.controls["show_best"].value = False
    assert conf.best_table.value == "" and conf.result["best"] == []
    assert conf.controls["load_best"].disabled


def test_step_bars_add_up_to_the_plans_step_time(conf):
    from course.instruments.configurator import STEP_PARTS

    set_controls(conf, model="llama3-70b", cluster="h100-1024", tp=8, pp=4, microbatches=16, zero_stage=1,
                 recompute="full")
    dp, p = expected_plan(conf.values())
    assert set(p.breakdown()) == set(STEP_PARTS)  # every part of the planner's step is drawn
    assert sum(conf.step_bars.y) == pytest.approx(p.step_time, rel=1e-12)
    assert conf.step_bars.y[list(STEP_PARTS).index("bubble")] == pytest.approx(p.bubble)


def test_step_and_mfu_cards_show_the_plans_range_and_its_driver(conf):
    # issue 46: where the configurator shows a step time or MFU it shows the planner's range beside it
    set_controls(conf, model="llama3-70b", cluster="h100-1024", tp=8, pp=4, microbatches=16, zero_stage=1,
                 recompute="full")
    dp, p = expected_plan(conf.values())
    r = conf.result
    assert r["step_range"] == pytest.approx(p.step_time_range, rel=1e-12)
    assert r["mfu_range"] == pytest.approx(p.mfu_range, rel=1e-12)
    assert r["step_range"][0] < r["step_seconds"] < r["step_range"][1]
    assert r["range_driver"] == p.range_driver
    assert f"range {100 * p.mfu_low:.1f}-{100 * p.mfu_high:.1f} %" in conf.cards.value
    assert "<b>Range</b>" in conf.math_peek.value and p.range_driver in conf.math_peek.value
