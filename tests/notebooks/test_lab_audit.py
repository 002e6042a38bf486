"""The student audit of Lab 05, Lab 06 and the tutorial: each finding has a check here that failed before
its fix (the page's numbers are computed here, from ``course.core`` or by hand, never read from the lab)."""

from __future__ import annotations

import contextlib
import io
import math
import re

import nbformat
import pytest

from course import core
from course.labs import lab05, lab06, tutorial
from course.notebook_api.lab_session import labs
from course.labs.tracks import scene_text

LABS = labs()


def _code_cells(lab):
    return [c for c in lab.cells() if c.role in ("code", "setup", "prompt")]


@pytest.mark.parametrize("prefix", sorted(LABS))
def test_no_cell_needs_a_rerun_after_locking(prefix):
    """A cell that branches on ``.locked`` shows its locked text only if run again after locking; the lock
    renders such text itself (``after_lock``), updated in place."""
    for cell in _code_cells(LABS[prefix]):
        assert not re.search(r"\.locked\b", cell.source), (prefix, cell.grade_id)


def test_log2_distractors_are_computed_right():
    for lab in LABS.values():
        for act in lab.acts:
            if act.lock is None:
                continue
            for option in act.lock.options.values():
                for times, n in re.findall(r"about ([\d,]+)x \(log2 of ([\d,]+)", option):
                    assert int(times.replace(",", "")) == round(math.log2(int(n.replace(",", "")))), option


def test_lab06_act1_options_are_distinct_models_of_the_ratio():
    options = lab06.ACT1.lock.options
    assert options["7x"].startswith(f"about {int(math.log2(128))}x")  # the tree's depth
    assert options["128x"].startswith("about 128x")  # N


def _lab05_act1_before_lock():
    texts = [scene_text(track, "act1").look for track in ("Cloud",)]
    texts += [c.source for c in lab05.LAB.cells() if c.role == "markdown"]
    texts += [lab05.LAB.answer("act1_allreduce").prompt(lab05.LAB.spec_for(v)) for v in [None, *range(20)]]
    return texts


def test_lab05_act1_does_not_frame_the_act_as_the_all_reduce_over_the_network():
    """The audit: three texts before the lock said "the gradient all-reduce ... over InfiniBand NDR", which is
    option B. The setting may name the fabric, not put the all-reduce on it."""
    framing = re.compile(r"all-reduce[^.;]*\b(runs )?over (InfiniBand|Ethernet)", re.I)
    for text in _lab05_act1_before_lock():
        assert not framing.search(text), text


def test_lab05_act2_distractors_are_layouts_of_the_cluster():
    """Every option multiplies to 1,024 GPUs and splits GPT-3's 96 layers evenly, so none is wrong on its
    face; each wrong one fails for a reason the planner shows."""
    act = lab05.ACT2
    for key, option in act.lock.options.items():
        tp, pp, dp = (int(re.search(rf"{d}=(\d+)", option).group(1)) for d in ("TP", "PP", "DP"))
        assert tp * pp * dp == 1024 and 96 % pp == 0, option
        plan = core.plan("gpt3-175b", "h100-1024", tp=tp, pp=pp, dp=dp, micro_batch=1, num_microbatches=32,
                         zero_stage=1, recompute="selective")
        codes = {code for code, _ in plan.violations}
        if key == act.lock.correct:
            assert plan.feasible
        else:
            best = core.plan("gpt3-175b", "h100-1024", tp=8, pp=4, dp=32, micro_batch=1,
                             num_microbatches=32 * 32 // dp, zero_stage=1, recompute="selective")
            assert codes or plan.mfu < best.mfu, (option, codes, plan.mfu, best.mfu)


# -- the tutorial ---------------------------------------------------------------------------------------

def _release(lab):
    return nbformat.read(f"release/{lab.name}/{lab.name}.ipynb", 4)


def test_tutorial_exercises_are_numbered_in_page_order():
    headings = [int(n) for c in tutorial.LAB.cells() if c.role == "markdown"
                for n in re.findall(r"^## Exercise (\d+)", c.source, re.M)]
    assert headings == sorted(headings) == list(range(1, len(headings) + 1))
    titles = [int(re.match(r"Exercise (\d+)", a.title).group(1)) for act in tutorial.LAB.acts for a in act.answers]
    assert titles == sorted(titles)


class _Lock:
    locked = False

    def after_lock(self, markdown, before):
        return before


class _Lab:
    def __init__(self, spec):
        self.spec = spec

    def lock(self, act_id):
        return _Lock()


def _run(source, spec, **names):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(source, {"core": names.pop("core", core), "lab": _Lab(spec), "MODEL": "llama3-70b",
                      "CLUSTER": "research-256", "display": lambda *a: None, **names})
    return out.getvalue()


def _cell(grade_id):
    return next(c.source for c in tutorial.LAB.cells() if c.grade_id == grade_id)


@pytest.mark.parametrize("variant", [None, *range(40)])
def test_the_bubble_table_does_not_hold_the_graded_answer(variant):
    spec = tutorial.LAB.spec_for(variant)
    p, m = spec["bubble_stages"], spec["bubble_microbatches"]
    key = 100 * (p - 1) / (m + p - 1)  # Narayanan et al. 2021, by hand
    shown = [float(x) for x in re.findall(r"(\d+\.\d)%", _run(_cell("tut_bubble_table"), spec))]
    assert len(shown) >= 12
    assert all(abs(x - key) > 0.05 for x in shown), (p, m, key)


def test_the_sweep_table_shows_five_rows_that_differ():
    # the sweep's best rows, the first two differing only in a column the table does not show
    base = dict(tp=1, cp=8, pp=8, interleave=1, dp=4, micro_batch=1, sequence_parallel=False, zero_stage=1,
                recompute="none", tokens_per_second=3e5, mfu=0.5, first_stage_layers=0)
    rows = [base, dict(base, first_stage_layers=1)] + [dict(base, tp=2, dp=2, tokens_per_second=2e5 - 1e3 * i)
                                                       for i in range(5)]

    class Table:
        def __len__(self):
            return len(rows)

        def row(self, i):
            return rows[i]

        def __getitem__(self, column):
            return [True] * len(rows)

    class Core:
        VIOLATION_CODES = {}

        @staticmethod
        def sweep(*args, **kwargs):
            return Table()

    lines = _run(_cell("tut_sweep"), tutorial.SPEC, core=Core()).splitlines()[1:6]
    assert len(set(lines)) == 5, lines
    real = _run(_cell("tut_sweep"), tutorial.SPEC).splitlines()[1:6]
    assert len(set(real)) == 5, real


@pytest.mark.parametrize("variant", [None, *range(40)])
def test_the_walk_through_sweep_does_not_print_the_graded_answer(variant):
    """Exercise 3 asks for the best tokens/s of the student's own case; the walk-through's sweep table (the
    tutorial's model on its 256 GPUs) must not be that case, or its top row is the answer."""
    spec = tutorial.LAB.spec_for(variant)
    walk_through = core.catalog.cluster(spec["cluster"])
    assert (spec["ex3_model"], spec["ex3_gpus"]) != (spec["model"], walk_through.nodes * walk_through.node.gpus_per_node)
    if variant is not None:  # another model may land within 2 % of a row by chance (2 of 40 do): not the same case
        return
    cluster = core.catalog.make_cluster(spec["ex3_node"], spec["ex3_gpus"], fabric=spec["ex3_fabric"])
    key = float(core.sweep(spec["ex3_model"], cluster).row(0)["tokens_per_second"])
    lines = _run(_cell("tut_sweep"), spec).splitlines()[1:6]
    printed = [float(x.replace(",", "")) for line in lines for x in re.findall(r"\b\d{1,3}(?:,\d{3})+\b", line)]
    assert len(printed) == 5
    assert all(abs(x - key) > 0.02 * key for x in printed), (spec["ex3_model"], spec["ex3_gpus"], key)
