"""The clean room (:mod:`autograder.judging.sandboxed_cleanroom`): what it can reach, and what its answer must look like."""

from __future__ import annotations

import json

import pytest
from nbformat.v4 import new_code_cell, new_notebook

from autograder.judging import sandboxed_cleanroom as cleanroom
from autograder.isolation import sandbox

SPLIT = {"functions": ["ch02_ex2_4"], "values": ["ch02_ex2_1"], "kernel": []}


def _request():
    return cleanroom.request_for(SPLIT, seed=3)


def _answer(request, nonce="n0", **override):
    job = request["functions"]["ch02_ex2_4"]
    data = {"functions": {"ch02_ex2_4": {"valid": [1] * len(job["valid"]),
                                         "invalid": [{"__raised__": "ValueError"}] * len(job["invalid"])}},
            "values": {"accum_steps": 64}, "stopped": []}
    data.update(override)
    return f"{cleanroom.RESULT_MARK} {nonce} {json.dumps(data)}\n".encode()


def test_split_puts_functions_and_names_in_the_clean_room():
    split = cleanroom.split_parts(["ch02_ex2_1", "ch02_ex2_4", "ch02_ex2_4_required_accum_steps", "nope",
                                   "lab06_act1_lock", "lab06_act2_small", "ch11_ex11_3"])
    assert split == {"functions": ["ch02_ex2_4", "ch02_ex2_4_required_accum_steps"],
                     "values": ["ch02_ex2_1"], "kernel": ["lab06_act1_lock", "lab06_act2_small"],
                     "ranks": ["ch11_ex11_3"]}  # a collective runs on real MPI ranks, never in the kernel
    request = _request()
    assert request["values"] == ["accum_steps"] and request["functions"]["ch02_ex2_4"]["function"] == "effective_batch"


def test_exactly_one_well_formed_answer_with_the_nonce_is_read():
    request = _request()
    assert cleanroom.parse(_answer(request), "n0", request)["values"] == {"accum_steps": 64}
    assert cleanroom.parse(b"noise\n" + _answer(request) + b"more noise\n", "n0", request) is not None
    assert cleanroom.parse(_answer(request) * 2, "n0", request) is None            # duplicated
    assert cleanroom.parse(_answer(request, nonce="guess"), "n0", request) is None  # wrong nonce
    assert cleanroom.parse(_answer(request, nonce="guess") + _answer(request), "n0", request) is None
    assert cleanroom.parse(b"", "n0", request) is None                              # no answer
    assert cleanroom.parse(_answer(request, extra=1), "n0", request) is None        # strict schema
    assert cleanroom.parse(_answer(request, values={"other": 1}), "n0", request) is None
    assert cleanroom.parse(_answer(request, functions={}), "n0", request) is None
    short = {"ch02_ex2_4": {"valid": [1], "invalid": []}}
    assert cleanroom.parse(_answer(request, functions=short), "n0", request) is None


def test_only_plain_values_are_read():
    request = _request()
    job = request["functions"]["ch02_ex2_4"]
    odd = {"ch02_ex2_4": {"valid": [{"__eq__": "always"}] + [1] * (len(job["valid"]) - 1),
                          "invalid": [1] * len(job["invalid"])}}
    data = cleanroom.parse(_answer(request, functions=odd), "n0", request)
    harvested = cleanroom.harvests(data, SPLIT)
    from course.notebook_api import safe_judge, REGISTRY

    verdict = safe_judge(REGISTRY["ch02_ex2_4"], harvested["ch02_ex2_4"], 3)
    assert verdict.score == 0  # every value 1 is wrong, and a dict is no number
    assert safe_judge(REGISTRY["ch02_ex2_1"], harvested["ch02_ex2_1"], 3).score == 1.0  # 64 steps, by hand


def test_code_cells_leave_out_the_instructors_test_cells():
    nb = new_notebook(cells=[
        new_code_cell("x = 1"),
        new_code_cell("grade_in_kernel()", metadata={"nbgrader": {"grade": True, "solution": False}}),
        new_code_cell("y = 2", metadata={"nbgrader": {"grade": False, "solution": True}})])
    assert cleanroom.code_cells(nb) == ["x = 1", "y = 2"]


@pytest.mark.skipif(sandbox.probe() is not None, reason="bubblewrap cannot create sandboxes here")
def test_clean_room_holds_the_students_code_and_nothing_of_the_course(tmp_path):
    """Helpers from other cells work, failing cells are skipped, the course package is unreachable."""
    probe_names = ["course.core", "course.assess.registry", "course.assess.kinds", "autograder",
                   "autograder.judging.sandboxed_cleanroom", "nbgrader"]
    nb = new_notebook(cells=[
        new_code_cell("from course.exercises import check\ncheck('2.4', globals())"),
        new_code_cell("def _product(a, b, c):\n    return a * b * c"),
        new_code_cell("raise RuntimeError('a broken cell is skipped')"),
        new_code_cell("%matplotlib inline\nimport importlib\nreachable = []\n"
                      f"for _n in {probe_names!r}:\n"
                      "    try:\n        importlib.import_module(_n); reachable.append(_n)\n"
                      "    except Exception:\n        pass\n"
                      "accum_steps = len(reachable)"),
        new_code_cell("def effective_batch(m, a, d):\n"
                      "    if min(m, a, d) < 1 or any(type(v) is not int for v in (m, a, d)):\n"
                      "        raise ValueError('m, a, d must be whole numbers >= 1')\n"
                      "    return _product(m, a, d)"),
    ])
    work = tmp_path / "room"
    work.mkdir()
    sandbox.prepare_scratch(work, 0, True)
    split = {"functions": ["ch02_ex2_4"], "values": ["ch02_ex2_1"], "kernel": []}
    out = cleanroom.evaluate(nb, work, split=split, seed=5, limits=sandbox.Limits(cell_timeout=20),
                             slot=0, use_bwrap=True, timeout=60)
    assert out["state"] == "ok", out
    # only nbgrader (a third-party package in the venv) imports; nothing of course or autograder
    assert out["harvested"]["ch02_ex2_1"] == {"values": {"accum_steps": 1}}
    from course.notebook_api import REGISTRY, safe_judge

    verdict = safe_judge(REGISTRY["ch02_ex2_4"], out["harvested"]["ch02_ex2_4"], 5)
    assert verdict.score == 1.0, verdict


def test_a_name_the_clean_room_did_not_find_is_explained():
    """`accum_steps = course.core....` works in the kernel but defines nothing in the clean room."""
    request = _request()
    data = cleanroom.parse(_answer(request, values={}), "n0", request)
    harvested = cleanroom.harvests(data, SPLIT)
    assert cleanroom.names_missing(harvested["ch02_ex2_1"])
    assert not cleanroom.names_missing(harvested["ch02_ex2_4"])
    assert cleanroom.names_missing({"missing": True}) and "without the course package" in cleanroom.MISSING_NOTE


def test_a_blank_answer_is_not_answered_and_a_lost_one_is_explained():
    """The release's stub assigns nothing: "not answered", without the note about the course package,
    which stays for a name some cell assigns that the clean room did not get (the cell failed there)."""
    from course.notebook_api import REGISTRY, safe_judge

    request, part = _request(), REGISTRY["ch02_ex2_1"]
    data = cleanroom.parse(_answer(request, values={}), "n0", request)
    missing = cleanroom.harvests(data, SPLIT)["ch02_ex2_1"]
    stub = ["# accum_steps = ...   (steps)\n# YOUR CODE HERE\npass", "def effective_batch(m, a, d):\n    pass"]
    blank = cleanroom.with_unbound(part, missing, cleanroom.bound_names(stub))
    assert safe_judge(part, blank, 3).reason == "`accum_steps` is not answered: no cell of your notebook assigns it"
    assert safe_judge(part, blank, 3).code == "not_answered"
    assert not cleanroom.names_missing(blank)
    lost = cleanroom.with_unbound(part, missing, cleanroom.bound_names(
        ["import course.core as cc\naccum_steps = cc.required_accum_steps(512, 8, 4)"]))
    assert safe_judge(part, lost, 3).reason == "`accum_steps` is not defined" and cleanroom.names_missing(lost)
    assert safe_judge(part, lost, 3).code == "error_in_cell"
    # the student's process cannot make a lost name look blank: the grader sets the key itself
    forged = {**missing, "__unbound__": ["accum_steps"]}
    assert cleanroom.with_unbound(part, forged, {"accum_steps"})["__unbound__"] == []
    none = cleanroom.harvests(cleanroom.parse(_answer(request, values={"accum_steps": None}), "n0", request), SPLIT)
    assert safe_judge(part, none["ch02_ex2_1"], 3).reason == "`accum_steps` is not answered: it is None"
    assert safe_judge(part, none["ch02_ex2_1"], 3).code == "not_answered"


def test_a_run_without_answer_is_placed_at_the_first_cell_its_checkpoint_never_saw_end():
    """Cells after the one that killed its checkpoint may still run in the orphaned process; the
    grader leaves out the first cell that started and never ended, and ignores other nonces."""
    mark = cleanroom.PROGRESS_MARK
    lines = [f"{mark} n0 cell 0", f"{mark} n0 done 0", f"{mark} n0 cell 1", f"{mark} n0 cell 2",
             f"{mark} n0 done 2", f"{mark} other done 1", f"{mark} n0 cell 3"]
    assert cleanroom._progress(("\n".join(lines) + "\n").encode(), "n0") == ("cell", 1)
    calls = [f"{mark} n0 cell 0", f"{mark} n0 done 0", f"{mark} n0 calls ch02_ex2_4", f"{mark} n0 called ch02_ex2_4",
             f"{mark} n0 calls ch02_ex2_4_required_accum_steps"]
    assert cleanroom._progress(("\n".join(calls) + "\n").encode(), "n0") == ("calls", "ch02_ex2_4_required_accum_steps")
    assert cleanroom._progress(f"{mark} n0 cell 4".encode(), "n0") is None  # an unfinished line says nothing
    assert cleanroom._progress(b"", "n0") is None
