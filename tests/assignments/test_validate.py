"""nbgrader's Validate tells the truth and costs nothing.

Blank, wrong and honest notebooks of every workbook chapter (and Lab 06) go through nbgrader's own ``Validator`` (what
the toolbar button, the Assignments list and ``nbgrader validate`` run). Validate names every exercise
that is unanswered or not yet right, passes the honest notebook, records no attempt in the design
ledger and shows no derivation; the same test cells run quietly in an interactive Run All.
"""

from __future__ import annotations

import json

import pytest

from . import student_notebooks as sn

pytestmark = pytest.mark.slow

STUDENT = "grace"
CHAPTERS = ("ch00_ring_allreduce", "ch01_zero", "ch02_gradient_accumulation", "ch03_lr_scaling",
            "ch04_comm_overhead", "ch05_pipeline", "ch06_tensor_parallel", "ch07_checkpointing",
            "ch08_mixed_precision", "ch09_capstone", "ch10_mixture_of_experts", "ch11_collectives_by_hand")


def _graded_exercises(name):
    from course.activities import SYLLABUS

    return [ex.number for ex in SYLLABUS.by_name[name].exercises
            if any(p.function is not None or p.value is not None for p in ex.parts)]


def _validate(path):
    from nbgrader.validator import Validator

    return Validator().validate(str(path))


def _named(results):
    import re

    return sorted({m for f in results.get("failed", []) for m in re.findall(r"Exercise (\d+\.\d+) not",
                                                                          f.get("error", ""))})


@pytest.mark.parametrize("name", CHAPTERS)
def test_validate_names_every_open_exercise_and_passes_honest_work(tmp_path, monkeypatch, name):
    ledger = tmp_path / "ledger.json"
    for var, value in sn.kernel_env(STUDENT, ledger).items():
        monkeypatch.setenv(var, value)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    expected = sorted(_graded_exercises(name), key=lambda n: [int(x) for x in n.split(".")])
    seen = {}
    for kind in ("blank", "wrong", "honest"):
        path = sn.write(sn.notebook(name, STUDENT, kind), tmp_path / kind / f"{name}.ipynb")
        results = _validate(path)
        seen[kind] = results
        errors = "\n".join(f.get("error", "") for f in results.get("failed", []))
        if kind == "honest":
            assert not results.get("failed"), errors
        else:
            assert sorted(_named(results), key=lambda n: [int(x) for x in n.split(".")]) == expected, errors
            assert ("not answered" if kind == "blank" else "not yet right") in errors
        assert "Worked derivation" not in errors and "derivation" not in errors.lower()
    # no attempt recorded, however often Validate runs
    assert not ledger.exists() or not any(v.get("attempts") for v in json.loads(ledger.read_text()).values())


def test_run_all_in_an_interactive_kernel_runs_every_test_cell_quietly(tmp_path):
    name = CHAPTERS[0]
    nb = sn.notebook(name, STUDENT, "wrong")
    path = sn.write(nb, tmp_path / f"{name}.ipynb")
    sn.run_visible(nb, path.parent, sn.kernel_env(STUDENT, tmp_path / "ledger.json"))
    tests = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code"]
    assert tests and all("_validate(" in c.source for c in tests if c.metadata["nbgrader"]["grade_id"].endswith(
        tuple("_" + n.replace(".", "_") for n in _graded_exercises(name))))
    assert not [c for c in tests if any(o.get("output_type") == "error" for o in c.outputs)]


def test_validate_a_lab_names_what_is_unanswered_and_never_judges_it(tmp_path, monkeypatch):
    """Labs have no visible check (graded on submission): Validate names every unanswered answer and
    unlocked prediction of Lab 06, and passes it answered and locked, right or not."""
    from course.activities import REGISTRY
    from tests.notebooks.test_labs import write_predictions

    name = "lab06_bandwidth_invariant"
    for var, value in sn.kernel_env(STUDENT, tmp_path / "ledger.json").items():
        monkeypatch.setenv(var, value)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    parts = [p for p in REGISTRY.values() if p.assignment == name]
    blank = _validate(sn.write(sn.notebook(name, STUDENT, "blank"), tmp_path / "blank" / f"{name}.ipynb"))
    errors = "\n".join(f.get("error", "") for f in blank.get("failed", []))
    ours = [f for f in blank.get("failed", []) if "_validate(" in f.get("source", "")]
    assert len(ours) == len(parts)  # the rest: nbgrader's own "You did not provide a response" (hand-graded)
    assert all("You did not provide a response" in f["error"] for f in blank["failed"] if f not in ours)
    for part in parts:
        assert part.title in errors
    honest_path = sn.write(sn.notebook(name, STUDENT, "honest"), tmp_path / "honest" / f"{name}.ipynb")
    write_predictions(honest_path.parent, name)
    honest = _validate(honest_path)
    assert not honest.get("failed"), "\n".join(f.get("error", "") for f in honest["failed"])
