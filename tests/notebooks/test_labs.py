"""Lab assignments: keys against hand computations, failure states from the controls, real nbgrader runs."""

from __future__ import annotations

import pytest

from course.notebook_api import REGISTRY, judge_json
from course.labs import lab05, lab06, lab07, lab08, tutorial

LABS = ["lab05_parallelism_paradox", "lab06_bandwidth_invariant", "tutorial_3d_parallelism", "lab07_expert_wall",
        "lab08_ring_for_real"]

#: the predictions a student locks with the buttons, as the reference submission's predictions.json
REFERENCE_PREDICTIONS = {"lab05_parallelism_paradox": {"lab05/act1": "B", "lab05/act2": "B", "lab05/part3": "A"},
                         "lab06_bandwidth_invariant": {"lab06/act1": "C", "lab06/act2": "C"},
                         "tutorial_3d_parallelism": {"tutorial/ex1": "C"},
                         "lab07_expert_wall": {"lab07/act1": "B", "lab07/act2": "B", "lab07/act3": "B"},
                         "lab08_ring_for_real": {"lab08/act1": "B", "lab08/act2": "C", "lab08/act3": "B"}}


def write_predictions(folder, name):
    import json

    (folder / "predictions.json").write_text(json.dumps(
        {k: {"value": v, "locked": True} for k, v in REFERENCE_PREDICTIONS[name].items()}))


# --- keys, by hand -----------------------------------------------------------

def test_naive_over_ring_is_about_n():
    # bandwidth-bound: naive 2(N-1)M/B, ring 2(N-1)/N M/B -> ratio N; latency is negligible at 14 GB
    assert lab06.LAB.key('act1_ratio') == pytest.approx(128, rel=0.01)


def test_small_update_winner_is_not_the_plain_tree_nor_the_ring():
    # by hand, N=128, M=0.5 MB, alpha=5 us, B=50 GB/s:
    # ring 254*5us + 2*127/128*0.5e6/50e9 = 1.27 ms + 19.8 us ~ 1.29 ms
    # tree 2*7*(5us + 10 us) = 210 us;  rabenseifner 2*7*5us + 19.8 us ~ 90 us
    ring = 254 * 5e-6 + 2 * 127 / 128 * 0.5e6 / 50e9
    tree = 14 * (5e-6 + 0.5e6 / 50e9)
    rab = 14 * 5e-6 + 2 * 127 / 128 * 0.5e6 / 50e9
    assert rab < tree < ring
    winners = lab06.act2_fastest(lab06.SPEC)  # the story's update is also Act II's unvaried question
    assert "rabenseifner" in winners and "tree" not in winners and "ring" not in winners
    assert lab06.LAB.key('act2_small') == pytest.approx(rab * 1e6, rel=0.01)


def test_lab_parts_reject_non_plain_and_missing_values():
    assert judge_json("lab06_act1_ratio", '{"value": {"__unplain__": "AlwaysEqual"}}').score == 0
    assert judge_json("lab06_act1_ratio", '{"value": 128.0}').score == 1
    assert judge_json("lab06_act1_ratio", '{"value": 11.0}').score == 0
    assert judge_json("lab06_act2_small", '{"value": "rabenseifner"}').score == 0
    tree_us = 14 * (5e-6 + 0.5e6 / 50e9) * 1e6  # a slower algorithm's time is not the fastest one's
    assert judge_json("lab06_act2_small", f'{{"value": {tree_us}}}').score == 0
    rab_us = (14 * 5e-6 + 2 * 127 / 128 * 0.5e6 / 50e9) * 1e6
    assert judge_json("lab06_act2_small", f'{{"value": {rab_us}}}').score == 1
    assert judge_json("lab06_act1_lock", '{"locked": false}').score == 0
    assert judge_json("lab06_act1_lock", '{"locked": "yes"}').score == 0


def test_lock_part_reads_predictions_json(tmp_path, monkeypatch):
    from course.ledger import Ledger
    from course.prediction import PredictionLock

    monkeypatch.chdir(tmp_path)
    part = REGISTRY["lab06_act1_lock"]
    assert part.grade({}).score == 0
    lock = PredictionLock("lab06/act1", "?", options={"A": "a", "B": "b"}, folder=tmp_path,
                          ledger=Ledger(tmp_path / "ledger.json"))
    lock.answer("B")  # a wrong prediction still earns the completion point
    assert part.grade({}).score == 1


# --- failure states reachable from the notebook's controls ----------------------

def test_lab06_comm_over_half_warning_from_the_workload_control():
    from course.instruments import AlgorithmDashboard

    dashboard = AlgorithmDashboard(gpus=128)
    dashboard.controls["workload"].value = "7B gradients (14 GB)"
    assert "comm_bound" not in dashboard.failures
    dashboard.controls["workload"].value = "175B gradients (350 GB)"
    assert "comm_bound" in dashboard.failures
    assert dashboard.result["crossovers"], "the dashboard shows a crossover size"


def _hud_after(lab, instruments, tmp_path, monkeypatch):
    """Run ``lab``'s HUD cell with ``instruments`` as the student left them; return the HUD."""
    from course.instruments.cards import HudFooter

    monkeypatch.setenv("COURSE_LEDGER", str(tmp_path / "ledger.json"))
    (cell,) = [c for c in lab.cells() if c.grade_id == f"{lab.prefix}_hud"]
    saved = {"lab05": lab05.SAVED, "lab06": lab06.SAVED, "lab07": lab07.SAVED}[lab.prefix]
    for name, instrument in instruments.items():  # as the notebook's cells do after building each one
        if name in saved:
            instrument.restore(saved[name], instruments.get("track"))
    namespace = dict(instruments, hud=HudFooter(prefix=lab.prefix))
    exec(cell.source, namespace)
    return namespace["hud"]


@pytest.mark.parametrize("lab", [lab05.LAB, lab06.LAB, lab07.LAB], ids=lambda lab: lab.prefix)
def test_every_gated_instrument_is_saved_to_the_ledger(lab):
    # the HUD only knows the failure states of the instruments the lab records
    import re

    source = "\n".join(c.source for c in lab.cells())
    gated = re.findall(r"^(\w+) = lab\.gate\(", source, flags=re.M)
    assert gated and all(f"{name}.record(" in source for name in gated), gated
    # ... and restored from it when built again (Run All, a restart), so saving never erases what it held
    assert all(f"{name}.restore(" in source for name in gated), gated


def test_lab06_hud_lists_the_comm_bound_state_the_dashboard_showed(tmp_path, monkeypatch):
    from course.instruments import AlgorithmDashboard, AllreduceComparator

    dashboard = AlgorithmDashboard(gpus=128)
    dashboard.controls["workload"].value = "175B gradients (350 GB)"  # the banner of Act II
    dashboard.controls["workload"].value = "7B gradients (14 GB)"  # gone again, but it was hit
    hud = _hud_after(lab06.LAB, dict(comparator=AllreduceComparator(gpus=128, message_gb=14),
                                     dashboard=dashboard), tmp_path, monkeypatch)
    assert hud.summary()["failures_hit"] == ["comm_bound"]
    assert "failure states hit: comm_bound" in hud.widget.value


def test_lab07_hud_lists_the_failure_states_of_act2_and_act3(tmp_path, monkeypatch):
    from course.instruments import AllToAllExplorer, Configurator, ExpertLoadView

    explorer = AllToAllExplorer(model="llama3-8b-moe", tokens=8192)
    explorer.controls["ep"].value = 16  # the wall: the exposed all-to-all outlasts the expert compute
    explorer.controls["model"].value = "deepseek-v3"  # EP 16, PP 1: the experts alone overflow a GPU
    load = ExpertLoadView(experts=64, ep=64)
    load.controls["skew"].value = 0.5
    configurator = Configurator(model="llama3-8b-moe", cluster="h100-1024", tp=1, pp=1, microbatches=2,
                                recompute="full", zero_stage=1, ep=1)
    hud = _hud_after(lab07.LAB, dict(configurator=configurator, explorer=explorer, load=load), tmp_path, monkeypatch)
    hit = hud.summary()["failures_hit"]
    assert {"all_to_all_bound", "experts_do_not_fit", "straggler_bound", "out_of_memory"} <= set(hit), hit


def test_lab05_hud_lists_the_bubble_chart_warning(tmp_path, monkeypatch):
    # the lab asks for the bubble chart's warning (PP = 8 with few micro-batches: (8-1)/(m+7) > 10 %)
    from course.instruments import (AllreduceComparator, BubbleChart, Configurator, ScalingExplorer,
                                    SyncAudit)
    from course.instruments.context import TrackSelector

    configurator = Configurator(model="gpt3-175b", cluster="h100-1024", tp=4, pp=8)
    bubbles = BubbleChart().follow_controls(configurator)
    bubbles.controls["pp"].value, bubbles.controls["microbatches"].value = 8, 8  # 7/15 = 47 %
    hud = _hud_after(lab05.LAB, dict(explorer=ScalingExplorer(params_b=7, gpus=512), track=TrackSelector(),
                                     fleet=AllreduceComparator(gpus=512, message_gb=14),
                                     configurator=configurator, bubbles=bubbles, audit=SyncAudit()),
                     tmp_path, monkeypatch)
    assert "bubble_over_ceiling" in hud.summary()["failures_hit"]


# --- real nbgrader ----------------------------------------------------------------

@pytest.fixture(scope="module")
def graded_labs(tmp_path_factory):
    from tests.assignments.nbgrader_course import NbgraderCourse, solution_submission

    root = tmp_path_factory.mktemp("labs")
    course = NbgraderCourse(root, LABS, ledger=root / "ledger.json")
    for name in LABS:
        course.submit("reference", name, solution_submission(course, name))
        write_predictions(root / "submitted" / "reference" / name, name)
        course.submit("untouched", name, course.release_notebook(name))
    course.autograde()  # every lab and student in one nbgrader process
    return course


def _auto_ids(name):
    return {gid for gid, p in REGISTRY.items() if p.assignment == name}


@pytest.mark.slow
@pytest.mark.parametrize("name", LABS)
def test_reference_gets_all_automatic_points_untouched_none(graded_labs, name):
    ids = _auto_ids(name)
    assert ids
    reference = graded_labs.grades(name, "reference")
    untouched = graded_labs.grades(name, "untouched")
    for gid in ids:
        assert reference[gid][0] == reference[gid][1] == REGISTRY[gid].points, gid
        assert untouched[gid][0] == 0, gid


@pytest.mark.slow
@pytest.mark.parametrize("name", LABS)
def test_source_notebook_executes_headless(graded_labs, name):
    import nbformat

    nb = nbformat.read(str(graded_labs.root / "autograded" / "reference" / name / f"{name}.ipynb"), 4)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert errors == []
    predictions = graded_labs.root / "autograded" / "reference" / name / "predictions.json"
    assert predictions.exists()


@pytest.mark.slow
def test_release_is_in_sync_with_source(tmp_path):
    from course.cli import fresh_release
    from course.assess.release import release_differences

    assert release_differences(LABS, fresh_release(LABS, tmp_path)) == [], \
        "run: python -m course.labs && course build-release " + " ".join(LABS)


def test_lab08_keys_by_hand():
    # the story's laptop: alpha 2 us, 5 GB/s
    # Act I, ring on 4 ranks, 16 MB: 6 alpha + 1.5 * 16e6 / 5e9 = 12 us + 4.8 ms
    assert lab08.LAB.key("act1_model") == pytest.approx(4.812, rel=1e-9)
    # Act II, 8 ranks: 14 a + 1.75 n b = 3 a + 3 n b  ->  n = 11 a / (1.25 b) = 8.8 * 2e-6 * 5e9 = 88 kB
    assert lab08.LAB.key("act2_crossover") == pytest.approx(88.0, rel=1e-9)
    # Act III, 4 ranks, 64 MB: 1.5 * 64e6 / 5e9 = 19.2 ms
    assert lab08.LAB.key("act3_bound") == pytest.approx(19.2, rel=1e-9)


def test_lab08_variants_keep_every_key_finite_and_positive():
    for variant in range(40):
        spec = lab08.LAB.spec_for(variant)
        for answer in ("act1_model", "act2_crossover", "act3_bound"):
            key = lab08.LAB.key(answer, spec)
            assert 0 < key < float("inf"), (variant, answer, key)


def test_tutorial_keys_by_hand():
    # (p-1)/(m+p-1) = 7/39
    assert tutorial.LAB.key('ex2_bubble') == pytest.approx(7 / 39)
    # pure DP: at least 16 bytes per parameter of mixed-precision Adam (70.6e9 params -> > 1100 GB) > 80 GB
    assert tutorial.LAB.key('ex1_memory') > 16 * 70e9 / 1e9
    assert tutorial.LAB.key('ex3_best') > 0


def test_lab05_keys_by_hand():
    # ring: 2*511*5us + 2*511/512*14e9/50e9 = 5.11 ms + 0.5589 s
    assert lab05.LAB.key('act1_allreduce') == pytest.approx(2 * 511 * 5e-6 + 2 * 511 / 512 * 14e9 / 50e9, rel=1e-6)
    # errata 5: the source's answer (TP=8, PP=4, DP=32) without ZeRO/recompute does not fit in 80 GB;
    # weights+grads+Adam alone are 16 B * 175e9 / 32 = 87.5 GB per GPU
    assert lab05.LAB.key('act2_memory') > 16 * 175e9 / 32 / 1e9 > 80


def test_lab05_part3_savings_by_hand():
    import math

    from course.core import catalog

    n, f, s = 1024, 0.05, 1.15
    price = catalog.accelerator("H100").price_per_hour  # an input (the catalog's list price), not a result
    bill = n * price * 730.5
    # Chen et al. 2016 stragglers: sync waits for the slowest, E[T] = 1 + (s-1)(1-(1-f)^N); an async worker 1 + (s-1)f
    sync_step, async_step = 1 + (s - 1) * (1 - (1 - f) ** n), 1 + (s - 1) * f
    mtbf = 50_000 * 3600 / n

    def waste(delta):  # Young 1974: tau = sqrt(2 delta M); waste = delta/tau + (tau/2 + R)/M, R = 2 min
        tau = math.sqrt(2 * delta * mtbf)
        return delta / tau + (tau / 2 + 120) / mtbf

    savings = lab05.part3_savings(lab05.SPEC)
    assert savings["bill"] == pytest.approx(bill)
    assert savings["async_saves"] == pytest.approx(bill * (1 - async_step / sync_step), rel=1e-9)
    assert savings["zero_saves"] == pytest.approx(bill * (1 - (1 - waste(98.0)) / (1 - waste(98.0 / n))), rel=1e-9)
    # the story: waiting costs ~12 % of the bill, checkpoint waste ~3.4 % of which ZeRO recovers most
    assert 0.12 < savings["async_saves"] / bill < 0.13
    assert 0.03 < savings["zero_saves"] / bill < 0.035
    assert judge_json("lab05_part3_async_saves", f'{{"value": {savings["async_saves"] * 1.015}}}').score == 1
    assert judge_json("lab05_part3_async_saves", f'{{"value": {savings["zero_saves"]}}}').score == 0
    assert judge_json("lab05_part3_zero_saves", '{"value": {"__unplain__": "AlwaysEqual"}}').score == 0


def test_lab05_part3_inputs_are_the_audits_defaults():
    """The graded challenge states the synchronization audit's defaults, so the audit shows the same dollars."""
    from course.instruments import SyncAudit
    from course.instruments import sync_audit

    c = lab05.SPEC
    assert (sync_audit.HOURS_PER_MONTH, sync_audit.GPU_MTBF_SECONDS, sync_audit.RESTART_SECONDS) == (
        c["hours_per_month"], c["gpu_mtbf_seconds"], c["restart_seconds"])
    audit = SyncAudit()
    assert (audit.controls["workers"].value, audit.controls["stragglers_pct"].value / 100,
            audit.controls["slowdown"].value, audit.controls["checkpoint_s"].value) == pytest.approx(
        (c["workers"], c["straggler_fraction"], c["slowdown"], c["checkpoint_seconds"]))
    savings = lab05.part3_savings(lab05.SPEC)
    assert audit.result["async_saves"] == pytest.approx(savings["async_saves"], rel=1e-9)
    assert audit.result["zero_saves"] == pytest.approx(savings["zero_saves"], rel=1e-9)


def test_lab05_failure_states_from_the_configurator_controls():
    from course.instruments import Configurator

    conf = Configurator(model="gpt3-175b", cluster="h100-1024", tp=8, pp=4)
    assert conf.failures == [] or not conf.failures
    conf.controls["tp"].value = 16
    assert "tp_crosses_node" in conf.failures
    conf.controls["tp"].value = 8
    conf.controls["zero_stage"].value = 0
    conf.controls["recompute"].value = "none"
    assert "out_of_memory" in conf.failures


@pytest.mark.slow
@pytest.mark.parametrize("name, expected", [("lab06_bandwidth_invariant", "4 of 8 points"),
                                            ("lab05_parallelism_paradox", "7 of 13 points")])
def test_sandboxed_autograder_reads_locks_from_the_submission(tmp_path, name, expected):
    """The real autograder (sandboxed harvest, trusted judge) gives the reference lab every automatic point."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    import nbformat

    from course.activities import answer_sources

    root = Path(__file__).resolve().parents[2]
    nb = nbformat.read(str(root / "source" / name / f"{name}.ipynb"), 4)
    answers = answer_sources(name, "lin")  # the reference solution with lin's own numbers
    for cell in nb.cells:
        gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if gid in answers:
            cell.source = answers[gid]
    nbformat.write(nb, str(tmp_path / f"{name}.ipynb"))
    write_predictions(tmp_path, name)
    result = subprocess.run([sys.executable, "-m", "autograder", "single", str(tmp_path / f"{name}.ipynb"),
                             "--student", "lin", "--out", str(tmp_path / "out"), "--no-feedback"],
                            cwd=root, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert expected in result.stdout  # every automatic point; the reflection points are manual (2 each)
    assert "lin / " in result.stdout
    assert (tmp_path / "out" / "grades.json").exists()
    json.loads((tmp_path / "out" / "grades.json").read_text())


@pytest.mark.slow
def test_sandboxed_autograder_gives_an_untouched_release_nothing(tmp_path):
    """Run All goes past unanswered cells (their stub raises nothing), yet each still scores 0."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    import nbformat

    root = Path(__file__).resolve().parents[2]
    name = "lab05_parallelism_paradox"
    release = root / "release" / name / f"{name}.ipynb"
    stubs = [c.source for c in nbformat.read(str(release), 4).cells
             if c.get("metadata", {}).get("nbgrader", {}).get("solution") and c.cell_type == "code"]
    assert stubs and all("raise" not in s and s.rstrip().endswith("# YOUR CODE HERE") for s in stubs)
    shutil.copy(release, tmp_path / f"{name}.ipynb")
    result = subprocess.run([sys.executable, "-m", "autograder", "single", str(tmp_path / f"{name}.ipynb"),
                             "--student", "ada", "--out", str(tmp_path / "out"), "--no-feedback"],
                            cwd=root, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "0 of 13 points" in result.stdout
