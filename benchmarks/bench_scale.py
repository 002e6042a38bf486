"""Benchmark: a synthetic class through the Gradescope runner and through ``class`` in 1, 2 and 4 shards.

The class (``--n``, default 500) mixes honest work (the reference solution with each student's own
numbers), wrong work (one answer off by the data-parallel factor), hostile work (a cycle of attacks
from ``tests/autograder/attacks.py`` that end by themselves: monkeypatching the judge, exiting the
kernel, always-equal objects, input transformers, forged clean-room lines) and broken files
(malformed JSON, no notebook). It is graded

1. by ``course-autograde class`` unsharded (the reference), then in 2 and in 4 shards, each shard
   one after the other with ``--workers`` sandboxes (a CI matrix runs them side by side on separate
   machines: its wall time is the slowest shard), merged with ``course-autograde merge``;
2. by the Gradescope bundle: for every submission a fresh root laid out as Gradescope lays out
   ``/autograder``, ``run_autograder`` run as its own process (Gradescope's fresh container per
   submission), ``--workers`` of them at a time.

It prints submissions per minute per core (wall time x cores used), whether each merged result
equals the unsharded one, and whether Gradescope's scores equal class mode's. No assertion on
time: the numbers are for the reader; the load average is printed before and after. (CPU time is
not printed: a kernel killed with its sandbox is reaped outside this process tree, so
``getrusage`` would leave it out of class mode's count but not of the runner's.)

    .venv/bin/python benchmarks/bench_scale.py --n 500        # the full class (hours on 2 cores)
    .venv/bin/python benchmarks/bench_scale.py --n 24         # a quick look
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.autograder import attacks  # noqa: E402 -- after the repository is put on sys.path
from tests.autograder.course_dir import (CHAPTER, grade_id, make_course, release, solution, submit,  # noqa: E402 -- after the repository is put on sys.path
                                         with_first_answer, with_wrong_first_answer)

HOSTILE = [("first", attacks.MONKEYPATCH), ("first", attacks.OS_EXIT), ("first", attacks.ALWAYS_EQUAL),
           ("first", attacks.INPUT_TRANSFORMER), ("build", attacks.FORGED_RESULT_LINES)]
LIMITS = ["--cell-timeout", "20", "--timeout", "60", "--memory-mb", "3072", "--max-processes", "64"]
SEED = "11"


def _kinds(n: int):
    """Per student: honest 40 %, wrong 30 %, hostile 20 %, broken 10 % (interleaved)."""
    pattern = ["honest", "wrong", "honest", "hostile", "wrong", "honest", "broken", "wrong", "honest", "hostile"]
    return [pattern[i % len(pattern)] for i in range(n)]


def synthetic_class(root: Path, n: int) -> dict:
    """Write ``n`` submissions into ``root/submitted``; return ``{student: notebook | bytes | None}``."""
    rel, work = release(root), {}
    for i, kind in enumerate(_kinds(n)):
        student = f"s{i:04d}@uni.edu"
        if kind == "honest":
            nb = solution(root, student=student)
        elif kind == "wrong":
            nb = with_wrong_first_answer(solution(root, student=student))
        elif kind == "hostile":
            where, code = HOSTILE[(i // 10) % len(HOSTILE)]
            nb = with_first_answer(rel, code) if where == "first" else copy.deepcopy(rel)
            if where == "build":  # in the last Build answer, so the release's stubs do not replace it
                next(c for c in nb.cells if grade_id(c) == "ch02_ex2_4_required_accum_steps_answer").source = code
        else:
            nb = b'{"cells": [ {"cell_type": "code", ' if (i // 10) % 2 == 0 else None
        work[student] = nb
        if isinstance(nb, bytes):
            submit(root, student, raw=nb)
        else:
            submit(root, student, nb)
    return work


class Clock:
    """Wall time of a block."""

    def __enter__(self):
        self.wall = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.wall


def _autograde(*args) -> None:
    proc = subprocess.run([sys.executable, "-m", "autograder", *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"course-autograde {args[0]} failed:\n{proc.stderr[-3000:]}")


def _students(folder: Path):
    rows = json.loads((folder / "grades.json").read_text())["students"]
    for row in rows:
        row.pop("seconds", None)
    return rows


def class_mode(root: Path, shards: int, workers: int) -> dict:
    common = [CHAPTER, "--course-root", str(root), "--seed", SEED, "--workers", str(workers), "--no-progress",
              "--no-feedback", *LIMITS]
    shard_walls = []
    with Clock() as total:
        for k in range(1, shards + 1):
            with Clock() as one:
                _autograde("class", *common, "--shard", f"{k}/{shards}", "--out", str(root / f"s{shards}-{k}"))
            shard_walls.append(one.wall)
        if shards > 1:
            _autograde("merge", *[str(root / f"s{shards}-{k}") for k in range(1, shards + 1)],
                       "--out", str(root / f"s{shards}-merged"))
    out = root / (f"s{shards}-merged" if shards > 1 else "s1-1")
    return {"wall": total.wall, "slowest_shard": max(shard_walls), "rows": _students(out)}


def _gradescope_one(bundle: Path, base: Path, student: str, work) -> dict:
    root = base / student
    with zipfile.ZipFile(bundle) as zf:
        zf.extractall(root / "source")
    shutil.copy(root / "source" / "run_autograder", root / "run_autograder")
    (root / "run_autograder").chmod(0o755)
    (root / "submission").mkdir()
    target = root / "submission" / f"{CHAPTER}.ipynb"
    if isinstance(work, bytes):
        target.write_bytes(work)
    elif work is not None:
        nbformat.write(work, str(target))
    (root / "submission_metadata.json").write_text(json.dumps({"users": [{"email": student, "id": 1}]}))
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "AUTOGRADER_ROOT": str(root),
           "AUTOGRADER_PYTHON": sys.executable, "HOME": str(root)}
    subprocess.run([str(root / "run_autograder")], cwd=root, env=env, capture_output=True, timeout=900)
    data = json.loads((root / "results" / "results.json").read_text())
    shutil.rmtree(root, ignore_errors=True)
    return data


def gradescope(root: Path, work: dict, parallel: int) -> dict:
    bundle = root / "autograder.zip"
    _autograde("gradescope", CHAPTER, "--course-root", str(root), "--out", str(bundle), "--seed", SEED, *LIMITS)
    base = root / "gradescope"
    base.mkdir()
    with Clock() as clock, ThreadPoolExecutor(parallel) as pool:
        results = dict(zip(work, pool.map(lambda item: _gradescope_one(bundle, base, *item), work.items())))
    return {"wall": clock.wall, "results": results}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=500, help="submissions in the synthetic class")
    parser.add_argument("--workers", type=int, default=None,
                        help="sandboxes at a time, in class mode and for the Gradescope runs (default: cores)")
    args = parser.parse_args(argv)
    cores = args.workers or len(os.sched_getaffinity(0))
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        root = make_course(Path(tmp) / "course")
        work = synthetic_class(root, args.n)
        runs = {shards: class_mode(root, shards, cores) for shards in (1, 2, 4)}
        gs = gradescope(root, work, cores)
    load_after = os.getloadavg()
    reference = runs[1]["rows"]
    class_scores = {r["student"]: r["score"] for r in reference}
    gs_mismatch = sorted(s for s, d in gs["results"].items() if abs(d["score"] - class_scores[s]) > 1e-9)
    kinds = dict(zip(work, _kinds(args.n)))
    print(f"synthetic class of {args.n} ({', '.join(f'{k} {list(kinds.values()).count(k)}' for k in ('honest', 'wrong', 'hostile', 'broken'))}), "
          f"{cores} cores used, chapter {CHAPTER}")
    print(f"load average before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, "
          f"after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}")
    print(f"{'engine':<40} {'wall s':>8} {'subs/min/core':>14}  equal to 1 shard")
    for shards, run in runs.items():
        equal = "reference" if shards == 1 else ("yes" if run["rows"] == reference else "NO")
        print(f"{f'class, {shards} shard(s) one after another':<40} {run['wall']:>8.1f} "
              f"{args.n / (run['wall'] / 60) / cores:>14.2f}  {equal}")
        if shards > 1:
            print(f"{f'  (matrix of {shards} machines: slowest shard)':<40} {run['slowest_shard']:>8.1f}")
    print(f"{'gradescope runner, 1 process/sub':<40} {gs['wall']:>8.1f} {args.n / (gs['wall'] / 60) / cores:>14.2f}"
          f"  scores {'equal' if not gs_mismatch else 'DIFFER: ' + ', '.join(gs_mismatch[:5])}")
    by_kind = {}
    for student, data in gs["results"].items():
        by_kind.setdefault(kinds[student], []).append(data["score"])
    print("gradescope mean score by kind: " + ", ".join(f"{k} {sum(v) / len(v):.2f}" for k, v in sorted(by_kind.items())))
    return 0 if not gs_mismatch and all(r["rows"] == reference for r in runs.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
