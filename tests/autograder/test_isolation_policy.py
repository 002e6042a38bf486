"""bubblewrap and the warm kernel's own sandbox build one declared policy (autograder/isolation/policy.py):
each rendering, read back, is the same sandbox (mounts, namespaces, rlimits, environment, user)."""

from __future__ import annotations

import pytest

from autograder.isolation import policy, sandbox, warm
from autograder.isolation.policy import Mount


def read_bwrap(cmd):
    """What a bwrap command line (with its prlimit and setpriv) builds, read back as bwrap reads it."""
    assert cmd[0] == "prlimit"
    options = {option: name for name, option, _ in policy.RLIMITS}
    end = cmd.index("--")
    rlimits = {options[arg[2:].split("=")[0]]: int(arg.split("=")[1]) for arg in cmd[1:end]}
    args = cmd[end + 1:]
    assert args[0] == "bwrap"
    mounts, namespaces, env, uid, pending = [], [], {}, None, {}
    i = 1
    while args[i] != "--":
        arg = args[i]
        if arg in ("--perms", "--size"):
            pending[arg[2:]] = args[i + 1]
            i += 2
        elif arg == "--dir":  # a bound path's parent folder
            pending = {}
            i += 2
        elif arg in ("--ro-bind", "--bind"):
            mounts.append(Mount(arg[2:], args[i + 2], args[i + 1]))
            i += 3
        elif arg in ("--tmpfs", "--dev", "--proc"):
            mounts.append(Mount(arg[2:], args[i + 1],
                                size=int(pending["size"]) if "size" in pending else None,
                                mode=int(pending["perms"], 8) if "perms" in pending else None))
            pending = {}
            i += 2
        elif arg == "--setenv":
            env[args[i + 1]] = args[i + 2]
            i += 3
        elif arg.startswith("--unshare-") and arg != "--unshare-user":
            namespaces.append(arg[len("--unshare-"):].removesuffix("-try"))
            i += 1
        elif arg == "--chdir":
            cwd = args[i + 1]
            i += 2
        else:
            i += 1
    rest = args[i + 1:]
    if rest[0] == "setpriv":
        uid = int(next(a for a in rest if a.startswith("--reuid=")).split("=")[1])
    return {"mounts": mounts, "namespaces": namespaces, "rlimits": rlimits, "env": env, "uid": uid, "cwd": cwd}


def read_warm(request):
    """What the warm kernel's fork builds from its request."""
    return {"mounts": [Mount(**m) for m in request["mounts"]], "namespaces": request["namespaces"],
            "rlimits": request["rlimits"], "env": request["env"], "uid": request["uid"], "cwd": request["cwd"]}


@pytest.mark.parametrize("run", [
    dict(extra_binds=["/tmp/kernel-sockets"], student="ada"),  # a kernel: its sockets writable, a student
    dict(course_visible=False, shared_memory=True),  # a clean room / ranks: no course, a /dev/shm
])
def test_bwrap_and_the_warm_kernel_build_the_same_sandbox(tmp_path, run):
    limits = sandbox.Limits(memory_bytes=2**31, processes=64, scratch_bytes=2**24, cpu_seconds=90)
    cmd = sandbox.command(str(tmp_path), ["python"], limits, slot=0, use_bwrap=True, **run)
    uid = sandbox.slot_uid(0) if __import__("os").geteuid() == 0 else None
    rule = sandbox.policy(str(tmp_path), uid, limits, **run)
    built_by_bwrap = read_bwrap(cmd)
    built_warm = read_warm(warm.request(rule, str(tmp_path / "root")))
    assert built_by_bwrap == built_warm
    assert built_by_bwrap["rlimits"]["RLIMIT_AS"] == 2**31 and built_by_bwrap["rlimits"]["RLIMIT_CORE"] == 0
    assert Mount("tmpfs", policy.SCRATCH, size=2**24, mode=0o777) in built_warm["mounts"]
    assert Mount("ro-bind", policy.SCRATCH_INPUT, str(tmp_path)) in built_warm["mounts"]
    assert (Mount("tmpfs", "/dev/shm", size=2**24, mode=0o1777) in built_warm["mounts"]) == bool(
        run.get("shared_memory"))


def test_the_warm_kernel_unshares_exactly_the_policys_namespaces():
    flags = warm.unshare_flags(policy.NAMESPACES)
    assert flags == warm.CLONE_NEWNS | warm.CLONE_NEWPID | warm.CLONE_NEWNET | warm.CLONE_NEWIPC \
        | warm.CLONE_NEWUTS | warm.CLONE_NEWCGROUP
    assert set(warm.CLONE_FLAGS) == {"mount", *policy.NAMESPACES}


def test_prlimit_and_the_warm_kernel_set_the_same_rlimits():
    limits = sandbox.Limits(open_files=77)
    prefix = sandbox.prlimit_prefix(limits)
    assert "--nofile=77" in prefix and "--core=0" in prefix
    assert sandbox.rlimits(limits) == policy.rlimits(limits)
    assert len(prefix) == len(policy.RLIMITS) + 2


def test_a_mount_the_renderers_do_not_know_is_refused():
    with pytest.raises(ValueError, match="kind must be one of"):
        Mount("overlay", "/x")
    with pytest.raises(ValueError, match="needs source"):
        Mount("ro-bind", "/x")
