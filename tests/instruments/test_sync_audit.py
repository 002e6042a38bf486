"""Synchronization audit driven without a browser."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from course import core
from course.core import catalog


from course.instruments.sync_audit import (
    GPU_MTBF_SECONDS, HOURS_PER_MONTH, RESTART_SECONDS, STRATEGIES, SyncAudit)

from .helpers import assert_alive, changed, mark_arrays, same_figures

PRICE = catalog.accelerator("H100").price_per_hour


@pytest.fixture(scope="module")
def audit():
    return SyncAudit()


def set_controls(inst, **values):
    with inst.batch():
        for name, value in values.items():
            inst.controls[name].value = value


def test_lab_plan_case_by_hand(audit):
    # 1,024 GPUs, 5 % stragglers 1.15x slow: the sync step waits for a straggler almost every time.
    set_controls(audit, mode="sync", workers=1024, stragglers_pct=5.0, slowdown=1.15, staleness_pct=0.0)
    r = audit.result
    sync_step = 1 + 0.15 * (1 - 0.95**1024)
    async_step = 1 + 0.15 * 0.05
    assert r["async_speedup"] == pytest.approx(sync_step / async_step, rel=1e-12)
    assert r["sync_idle_fraction"] == pytest.approx(1 - async_step / sync_step, rel=1e-12)
    assert r["sync_throughput"] == pytest.approx(1024 * 32 / sync_step, rel=1e-12)
    assert r["mean_staleness"] == 1023
    bill = 1024 * PRICE * HOURS_PER_MONTH
    assert r["monthly_bill"] == pytest.approx(bill)
    # the infrastructure lead's "about $1M a month" of waiting
    waiting = bill * r["sync_idle_fraction"] * (1 - r["waste_fraction"])
    assert 0.8e6 < waiting < 1.3e6
    assert r["async_saves"] == pytest.approx(bill - bill / r["async_speedup"], rel=1e-9)


def test_numbers_equal_the_core(audit):
    set_controls(audit, mode="async", workers=256, stragglers_pct=10.0, slowdown=2.0, checkpoint_s=300.0,
                 staleness_pct=20.0, zero_stage=3, model="llama3-8b")
    r = audit.result
    assert r["async_throughput"] == pytest.approx(core.async_throughput(32, 1.0, 256, 0.10, 2.0))
    assert r["straggler_staleness"] == pytest.approx(core.straggler_staleness(256, 0.10, 2.0))
    mtbf = core.cluster_mtbf(GPU_MTBF_SECONDS, 256)
    tau = core.young_interval(300.0, mtbf)
    assert r["waste_fraction"] == pytest.approx(core.waste_fraction(tau, 300.0, mtbf, RESTART_SECONDS))
    assert r["zero_checkpoint_seconds"] == pytest.approx(300.0 / 256)
    assert r["model_state_bytes"] == pytest.approx(core.model_state_bytes(8e9, zero_stage=3, dp=256))
    assert r["model_state_bytes_without_zero"] == pytest.approx(16 * 8e9)


def test_dollar_columns_hold_the_same_useful_work(audit):
    set_controls(audit, workers=512, stragglers_pct=8.0, slowdown=1.5, checkpoint_s=120.0, staleness_pct=15.0)
    parts = np.array(audit.bars.y)  # (components, strategies), millions of dollars
    assert parts.shape == (4, len(STRATEGIES))
    np.testing.assert_allclose(parts[0], parts[0, 0])  # useful work identical in every column
    totals = audit.result["monthly_cost"]
    np.testing.assert_allclose(parts.sum(axis=0) * 1e6, [totals[s] for s in STRATEGIES], rtol=1e-9)
    assert totals["sync (today)"] == pytest.approx(audit.result["monthly_bill"])
    assert parts[1, 1] == 0 and parts[3, 0] == 0 and parts[3, 2] == 0  # async never waits; only async is stale
    assert audit.result["zero_saves"] > 0  # sharded checkpoints always cut the checkpoint waste


def test_async_penalty_banner_exactly_past_break_even(audit):
    set_controls(audit, mode="async", workers=1024, stragglers_pct=5.0, slowdown=1.15, staleness_pct=10.0)
    break_even = audit.result["async_speedup"] - 1  # ~14 %
    assert "async_costs_more" not in audit.failures and audit.result["async_saves"] > 0
    audit.controls["staleness_pct"].value = 20.0
    assert 0.2 > break_even
    assert "async_costs_more" in audit.failures and audit.result["async_saves"] < 0
    audit.controls["mode"].value = "sync"
    assert "async_costs_more" not in audit.failures


def test_marks_change_in_the_same_figure(audit):
    figs, marks = list(audit.figures), [m for f in audit.figures for m in f.marks]
    before = mark_arrays(audit)
    audit.controls["slowdown"].value = 3.0 if audit.controls["slowdown"].value != 3.0 else 2.0
    assert same_figures(audit, figs, marks)
    assert changed(before, mark_arrays(audit))


def _check(audit):
    assert_alive(audit)
    assert set(audit.failures) <= {"async_costs_more"}
    r = audit.result
    assert r["async_throughput"] >= r["sync_throughput"] * (1 - 1e-12)
    assert 0 <= r["sync_idle_fraction"] < 1


def test_grid_never_escapes(audit):
    for mode, n, f, s in itertools.product(("sync", "async"), (8, 16384), (0.0, 20.0), (1.0, 4.0)):
        set_controls(audit, mode=mode, workers=n, stragglers_pct=f, slowdown=s)
        _check(audit)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mode=st.sampled_from(["sync", "async"]), n=st.sampled_from([2**k for k in range(3, 15)]),
       f=st.floats(0, 20), s=st.floats(1, 4), ckpt=st.floats(1, 3000), stale=st.floats(0, 100),
       zero=st.sampled_from([1, 2, 3]), model=st.sampled_from(["llama3-8b", "llama3-70b", "gpt3-175b", "llama3-405b"]))
def test_fuzz(audit, mode, n, f, s, ckpt, stale, zero, model):
    set_controls(audit, mode=mode, workers=n, stragglers_pct=f, slowdown=s, checkpoint_s=ckpt, staleness_pct=stale,
                 zero_stage=zero, model=model)
    _check(audit)
