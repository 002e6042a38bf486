"""Kernels forked from the pre-warmed zygote (:mod:`autograder.isolation.warm`) are isolated as bwrap isolates
them: the same probe notebook, run both ways, sees the same user, capabilities, limits, file
system, processes, network and environment; and what one forked kernel does is not seen by the
next one or by the zygote."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from nbformat.v4 import new_code_cell, new_notebook

from autograder.isolation import kernel, sandbox, warm

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sandbox.probe() is not None or os.geteuid() != 0,
                       reason="the zygote builds its sandbox as root, with bubblewrap's namespaces"),
]

PROBE = f"TESTS = {str(Path(__file__).resolve().parent)!r}\n" + r'''
import json, os, resource, socket
status = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines() if ":" in line)
mounts = sorted((line.split()[4], "ro" if line.split()[5].startswith("ro") else "rw")
                for line in open("/proc/self/mountinfo")
                if not line.split()[4].startswith(("/tmp/", "/proc/")))
facts = {
    "uid": os.getresuid(), "gid": os.getresgid(), "groups": os.getgroups(),
    "caps": {k: status[k].strip() for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")},
    "no_new_privs": status["NoNewPrivs"].strip(),
    "limits": [resource.getrlimit(getattr(resource, n)) for n in
               ("RLIMIT_AS", "RLIMIT_NPROC", "RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_NOFILE", "RLIMIT_CORE")],
    "root": sorted(os.listdir("/")), "dev": sorted(os.listdir("/dev")), "mounts": mounts,
    "pids": sorted(p for p in os.listdir("/proc") if p.isdigit()),
    "net": sorted(name for _, name in socket.if_nameindex()),
    "env": sorted(os.environ), "cwd": os.getcwd(), "scratch": sorted(os.listdir(".")),
    "given": open("given.txt").read(), "session_leader": os.getsid(0) == os.getpid(),
    "sees_tests": os.path.exists(TESTS), "writable_usr": os.access("/usr", os.W_OK),
}
print("FACTS" + json.dumps(facts))
'''


def _facts(tmp_path, name, monkeypatch, warm_kernel: bool, cells=()):
    if not warm_kernel:
        monkeypatch.setenv("AUTOGRADER_NO_WARM_KERNEL", "1")
    work = tmp_path / name
    work.mkdir()
    (work / "given.txt").write_text("the instructor's file")
    sandbox.prepare_scratch(work, 0, use_bwrap=True)
    nb = new_notebook(cells=[new_code_cell(c) for c in (*cells, PROBE)])
    result = kernel.execute(nb, work, grade_ids=[], seed=1, limits=sandbox.Limits(processes=77),
                            slot=0, use_bwrap=True, student="student007")
    monkeypatch.delenv("AUTOGRADER_NO_WARM_KERNEL", raising=False)
    assert result["status"]["state"] == "ok", result["status"]
    text = "".join(o.get("text", "") for o in result["executed"].cells[-1].outputs)
    return result, json.loads(text.split("FACTS", 1)[1])


def test_a_forked_kernel_is_isolated_as_a_bwrap_kernel(tmp_path, monkeypatch):
    spawned = []
    real_spawn = warm.Zygote.spawn
    def spy(self, req):  # the zygote's own self-test (a fork that only builds the sandbox) not counted
        if not req.get("probe"):
            spawned.append(req)
        return real_spawn(self, req)

    monkeypatch.setattr(warm.Zygote, "spawn", spy)
    _, forked = _facts(tmp_path, "forked", monkeypatch, warm_kernel=True)
    assert len(spawned) == 1  # the zygote made this kernel
    _, launched = _facts(tmp_path, "launched", monkeypatch, warm_kernel=False)
    assert len(spawned) == 1  # and bwrap made this one
    assert {k: v for k, v in forked.items() if k != "env"} == {k: v for k, v in launched.items() if k != "env"}
    assert set(forked["env"]) ^ set(launched["env"]) == set()
    # and what they share is the sandbox, not the grader's world
    assert forked["uid"][0] >= sandbox.FIRST_SLOT_UID and set(forked["uid"]) == {forked["uid"][0]}
    assert set(forked["caps"].values()) == {"0000000000000000"} and forked["no_new_privs"] == "1"
    assert forked["limits"][1] == [77, 77] and forked["limits"][5] == [0, 0]
    assert forked["net"] == ["lo"] and forked["pids"] == ["1", "2"]
    assert not forked["sees_tests"] and not forked["writable_usr"]
    assert ["/usr", "ro"] in forked["mounts"] and ["/scratch", "rw"] in forked["mounts"]
    assert forked["given"] == "the instructor's file" and forked["cwd"] == sandbox.SCRATCH


def test_nothing_a_forked_kernel_does_reaches_the_next_one(tmp_path, monkeypatch):
    tamper = ("import sys, course.exercises, random\n"
              "course.exercises.check = lambda *a, **k: 'forged'\n"
              "sys.modules['json'].TAMPERED = True\n"
              "open('/scratch/left-behind', 'w').write('x')\n"
              "print('FIRST', random.random())")
    first, _ = _facts(tmp_path, "first", monkeypatch, warm_kernel=True, cells=[tamper])
    second, facts = _facts(tmp_path, "second", monkeypatch, warm_kernel=True, cells=[
        "import sys, course.exercises, random\n"
        "print('SECOND', course.exercises.check.__name__, hasattr(sys.modules['json'], 'TAMPERED'), "
        "random.random())"])
    assert "left-behind" not in facts["scratch"]
    said = "".join(o.get("text", "") for o in second["executed"].cells[0].outputs).split()
    assert said[:3] == ["SECOND", "check", "False"]
    first_random = "".join(o.get("text", "") for o in first["executed"].cells[0].outputs).split()[1]
    assert said[3] != first_random  # each fork draws its own random numbers
    assert warm.zygote() is not None and warm.zygote().alive()  # the zygote itself is untouched


def test_a_zygote_that_cannot_build_its_sandbox_leaves_kernels_to_bwrap(monkeypatch):
    real = sandbox.readable_paths
    monkeypatch.setattr(sandbox, "readable_paths", lambda course_visible=True: [*real(course_visible), "/nonexistent-x"])
    monkeypatch.setattr(warm, "_zygote", None)
    monkeypatch.setattr(warm, "_failed", None)
    assert warm.zygote() is None  # its self-test found that the mount fails here
    assert "could not be built" in warm._failed
    assert warm.zygote() is None  # and it is not tried again for every submission
