"""The grader-driven kernel (:mod:`autograder.isolation.kernel`): output cap, harvest, deadline, no-bwrap fallback."""

from __future__ import annotations

import asyncio
import json

import pytest
from nbformat.v4 import new_code_cell, new_notebook

from autograder.isolation import kernel, sandbox


class _Stream:
    """Stands in for ipykernel's OutStream: records what reaches the wire."""

    def __init__(self):
        self.sent = []

    def write(self, text):
        self.sent.append(text)
        return len(text)


def test_output_cap_cuts_each_stream_once_and_keeps_a_raw_writer(monkeypatch):
    out, err = _Stream(), _Stream()
    monkeypatch.setattr("sys.stdout", out)
    monkeypatch.setattr("sys.stderr", err)
    exec(kernel.output_cap_source(10), {})
    assert out.write("abcdef") == 6 and out.write("ghijklmnop") == 10 and out.write("more") == 4
    assert "".join(out.sent) == "abcdefghij\n" + kernel.CUT_NOTE + "\n"  # 10 characters, then the note
    err.write("e" * 3)
    assert err.sent == ["eee"]  # each stream has its own budget
    out._autograder_raw_write("harvest line\n")  # the harvest cell's way past the cap
    assert out.sent[-1] == "harvest line\n"


def test_harvest_source_uses_no_student_names():
    code = kernel.harvest_source("ch02_ex2_1", 7)
    compile(code, "<harvest>", "exec")
    assert "__import__('sys')" in code and "'ch02_ex2_1', globals(), 7" in code


def _run(tmp_path, cells, **limits):
    work = tmp_path / "work"
    work.mkdir()
    sandbox.prepare_scratch(work, 0, use_bwrap=False)
    nb = new_notebook(cells=[new_code_cell(c) for c in cells])
    return kernel.execute(nb, work, grade_ids=["ch02_ex2_1"], seed=3,
                          limits=sandbox.Limits(**limits), slot=0, use_bwrap=False)


@pytest.mark.slow
def test_rlimit_fallback_runs_harvests_and_cuts_a_huge_print(tmp_path, capfd):
    async def from_a_running_loop():  # as when an instructor grades from a notebook
        return _run(tmp_path, ["accum_steps = 2048 // (4 * 8)", "print('x' * 30_000_000)", "print('after')"])

    result = asyncio.run(from_a_running_loop())
    assert result["status"]["state"] == "ok", result["status"]
    assert json.loads(result["harvested"]["ch02_ex2_1"]) == {"values": {"accum_steps": 64}}
    assert result["status"]["output_truncated"]
    printed = "".join(o.get("text", "") for o in result["executed"].cells[1].outputs)
    assert len(printed) < 2_000_000 and kernel.CUT_NOTE in printed
    # the kernel's own stdout/stderr (its banner, a student's os.write(1, ...)) never reach the grader's
    assert "ipykernel" not in capfd.readouterr().out


@pytest.mark.slow
def test_deadline_kills_a_kernel_that_ignores_interrupts(tmp_path):
    stubborn = ("import time\nwhile True:\n    try:\n        time.sleep(0.05)\n"
                "    except KeyboardInterrupt:\n        pass")
    result = _run(tmp_path, ["x = 1", stubborn], cell_timeout=2, submission_timeout=6)
    assert result["status"] == {"state": "timeout", "killed": True, "seconds": result["status"]["seconds"],
                                "output_truncated": False}
    assert result["executed"] is None and result["harvested"] == {}


@pytest.mark.slow
@pytest.mark.skipif(sandbox.probe() is not None, reason="bubblewrap cannot create sandboxes here")
def test_scratch_is_a_capped_tmpfs_that_leaves_the_disk_alone(tmp_path):
    filler = ("import os\nwritten = 0\ntry:\n    for i in range(10_000):\n"
              "        with open(f'f{i}.bin', 'wb') as fh:\n            fh.write(b'x' * 2**20)\n"
              "        written += 1\nexcept OSError as exc:\n    err = exc.errno")
    work = tmp_path / "work"
    work.mkdir()
    (work / "data.txt").write_text("given with the assignment")
    sandbox.prepare_scratch(work, 0, use_bwrap=True)
    nb = new_notebook(cells=[new_code_cell(c) for c in (
        "print(open('data.txt').read())", filler, "print(written, err)", "accum_steps = 64")])
    result = kernel.execute(nb, work, grade_ids=["ch02_ex2_1"], seed=3, use_bwrap=True, slot=0,
                            limits=sandbox.Limits(scratch_bytes=32 * 2**20))
    assert result["status"]["state"] == "ok", result["status"]
    outputs = ["".join(o.get("text", "") for o in c.outputs) for c in result["executed"].cells]
    assert outputs[0].strip() == "given with the assignment"  # the submission's files are there
    written, errno = outputs[2].split()
    assert int(written) < 32 and int(errno) == 28  # ENOSPC at the cap
    assert not list(work.glob("f*.bin"))  # nothing reached the grader's disk
    assert json.loads(result["harvested"]["ch02_ex2_1"]) == {"values": {"accum_steps": 64}}


@pytest.mark.slow
def test_a_kernel_that_cannot_start_gives_a_reason_not_a_crash(tmp_path, monkeypatch):
    monkeypatch.setattr(sandbox, "prlimit_prefix", lambda limits: ["/bin/false", "--"])  # launcher dies at once
    result = _run(tmp_path, ["x = 1"])
    assert result["status"]["state"] == "error" and result["status"]["cell"] == -1, result["status"]
    assert result["harvested"] == {}


@pytest.mark.slow
def test_a_duplicated_harvest_line_is_not_read(tmp_path):
    """A rewritten harvest that prints a second marked line (the honest one and a forged one)
    leaves the part unread, so it earns nothing instead of whichever line came last."""
    forged = ("import course.exercises as ce\n_real = ce.harvest_json\n"
              "ce.harvest_json = lambda gid, ns, seed=0: (_real(gid, ns, seed) + '\\n' + "
              f"{kernel.HARVEST_MARK!r} + '{{\"values\": {{\"accum_steps\": 64}}}}')")
    result = _run(tmp_path, ["accum_steps = 3", forged])
    assert result["status"]["state"] == "ok", result["status"]
    assert result["harvested"] == {}
