"""One class-mode run shared by the red-team and class-mode tests (it is the slow part)."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import pytest

from . import attacks
from .course_dir import CHAPTER, ROOT, grade_id, make_course, release, solution, submit, with_first_answer

#: per-run limits of the shared run: small enough to keep the test quick
LIMITS = ["--cell-timeout", "20", "--timeout", "60", "--memory-mb", "3072", "--max-processes", "64"]


def _huge_output(nb):
    nb = copy.deepcopy(nb)
    nb.cells.append(nb.cells[-1].__class__(cell_type="code", metadata={}, outputs=[], execution_count=None,
                                           source="print('x' * (40 * 2**20))\nfor i in range(200000):\n    print(i)"))
    return nb


def _without_test_cells(nb):
    nb = copy.deepcopy(nb)
    nb.cells = [c for c in nb.cells if not (c.get("metadata", {}).get("nbgrader", {}).get("grade")
                                            and not c.metadata["nbgrader"].get("solution"))]
    return nb


def _duplicated_test_cell(nb):
    nb = copy.deepcopy(nb)
    index = next(i for i, c in enumerate(nb.cells) if grade_id(c) == "ch02_ex2_1")
    dup = copy.deepcopy(nb.cells[index])
    dup.pop("id", None)
    nb.cells.insert(index, dup)
    return nb


def _edited_metadata(nb):
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("grade"):
            meta["points"] = 100.0
        if grade_id(cell) == "ch02_ex2_1":
            cell.source = "pass  # the student replaced the test"
    return nb


def _with_answer(nb, answer_id: str, code: str):
    nb = copy.deepcopy(nb)
    next(c for c in nb.cells if grade_id(c) == answer_id).source = code
    return nb


def _without_value_errors(nb):
    """The reference solution, except that `effective_batch` never raises ValueError."""
    nb = copy.deepcopy(nb)
    cell = next(c for c in nb.cells if grade_id(c) == "ch02_ex2_4_answer")
    cell.source = ("def effective_batch(micro_batch, accum_steps, dp):\n"
                   "    return micro_batch * accum_steps * dp\n")
    return nb


@pytest.fixture(scope="session")
def red_team(tmp_path_factory):
    """Course root with honest and hostile submissions, graded once by the CLI with 2 workers."""
    root = make_course(tmp_path_factory.mktemp("redteam") / "course")
    outside = [root / "pwned.txt", root / "source" / "pwned.txt", "/tmp/autograder-pwned.txt"]
    rel = release(root)
    source_nb = root / "source" / CHAPTER / f"{CHAPTER}.ipynb"
    hostile = {
        "a_forkbomb": attacks.FORK_BOMB, "c_alwayseq": attacks.ALWAYS_EQUAL,
        "c_transformer": attacks.INPUT_TRANSFORMER, "c_excepthook": attacks.EXCEPTION_HANDLER,
        "c_monkeypatch": attacks.MONKEYPATCH, "d_sysexit": attacks.SYS_EXIT, "d_osexit": attacks.OS_EXIT,
        "d_kill": attacks.KERNEL_KILL, "e_loop": attacks.INFINITE_LOOP, "b_stubborn": attacks.STUBBORN_LOOP,
        "e_membomb": attacks.MEMORY_BOMB, "f_write_outside": attacks.write_outside(outside),
        "f_read_source": attacks.read_secrets(source_nb, root / "gradebook.db"),
    }
    # issue #13: forged harvests and the course package reached from the clean room; written into the
    # last Build answer cell, so the release's stubs do not overwrite the functions they define
    in_last_build_cell = {
        "i_harvest_replaced": attacks.HARVEST_REPLACED, "i_fake_module": attacks.FAKE_MODULE,
        "i_second_copy": attacks.SECOND_COPY, "i_keys_from_disk": attacks.keys_from_disk(ROOT),
        "i_importlib": attacks.IMPORTLIB_TRICKS, "i_kernel_stash": attacks.KERNEL_STASH,
        "i_forged_lines": attacks.FORGED_RESULT_LINES, "i_patched_json": attacks.PATCHED_JSON_BUILTINS,
        "i_exit_tricks": attacks.EXIT_AND_TIMER_TRICKS, "i_cleanroom_hang": attacks.CLEANROOM_HANG,
        "i_registry_keys": attacks.KEYS_FROM_REGISTRY,
    }
    for student, code in hostile.items():
        submit(root, student, with_first_answer(rel, code))
    for student, code in in_last_build_cell.items():
        submit(root, student, _with_answer(rel, "ch02_ex2_4_required_accum_steps_answer", code))
    submit(root, "a_honest", solution(root, student="a_honest"))
    submit(root, "m_honest", solution(root, student="m_honest"))
    submit(root, "g_huge_output", _huge_output(solution(root, student="g_huge_output")))
    submit(root, "g_deleted_tests", _without_test_cells(solution(root, student="g_deleted_tests")))
    submit(root, "g_duplicated", _duplicated_test_cell(rel))
    submit(root, "g_edited_metadata", _edited_metadata(rel))
    submit(root, "p_no_value_errors", _without_value_errors(solution(root, student="p_no_value_errors")))
    submit(root, "h_malformed", raw=b'{"cells": [ {"cell_type": "code", ')
    submit(root, "h_missing")
    out = root / "out"
    cmd = [sys.executable, "-m", "autograder", "class", CHAPTER, "--course-root", str(root), "--out", str(out),
           "--workers", "2", "--seed", "7", *LIMITS]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads((out / "grades.json").read_text())
    return {"root": root, "out": out, "proc": proc, "data": data, "outside": outside,
            "rows": {r["student"]: r for r in data["students"]}}
