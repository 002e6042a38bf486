"""Benchmark: this autograder vs plain nbgrader on one workbook chapter, same machine, same run.

40 submissions (half the reference solution with each student's own numbers, half wrong answers) are graded

1. by one plain ``nbgrader autograde`` process followed by ``nbgrader generate_feedback``
   (serial, no isolation: the baseline an instructor has without this package), and
2. by ``course-autograde class`` (sandboxed, trusted judging, feedback included) with
   ``--workers`` parallel sandboxes (default: the cores available), and again with
   ``--no-feedback`` to compare with ``nbgrader autograde`` alone.

It prints both wall times and their ratio, the per-submission overhead of the
autograder over a bare kernel start + execution of the same notebook (nbclient, no
sandbox), measured here too, and where a submission's time goes: the mean of each
phase the grader records per student in ``grades.json`` (``phases``: open + sanitize,
sandbox (kernel and clean room side by side; their own clocks are shown too), judge,
gradebook, write, feedback). No assertion on times: the numbers are for the reader.

    .venv/bin/python benchmarks/bench_autograder.py [--n 40] [--chapter ch02_gradient_accumulation]
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
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]


def _env():
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    return dict(os.environ, PATH=path, PYTHONHASHSEED="0")


def _run(cmd, cwd):
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=_env(), capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, cmd))} failed:\n{proc.stderr[-2000:]}")
    return time.perf_counter() - started


def _nbgrader(root, *args):
    return _run([sys.executable, "-m", "nbgrader", *args, "--log-level=ERROR"], root)


def make_course(root: Path, chapter: str, plain: bool = False) -> None:
    root.mkdir(parents=True)
    shutil.copy(ROOT / "nbgrader_config.py", root / "nbgrader_config.py")
    if plain:  # the course's config makes `nbgrader autograde` sandboxed; the baseline is nbgrader's own
        from autograder.engines.formgrader import PLAIN_NBGRADER_CONFIG

        with open(root / "nbgrader_config.py", "a") as fh:
            fh.write(PLAIN_NBGRADER_CONFIG)
    shutil.copytree(ROOT / "source" / chapter, root / "source" / chapter)
    _nbgrader(root, "generate_assignment", chapter, "--force")


def submissions(root: Path, chapter: str, n: int):
    """Half correct (the reference solution with each student's own numbers: variants are on),
    half wrong (the release notebook as fetched). Returns the source notebook."""
    from course.activities import answer_sources

    src = nbformat.read(str(root / "source" / chapter / f"{chapter}.ipynb"), 4)
    for cell in src.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    wrong = nbformat.read(str(root / "release" / chapter / f"{chapter}.ipynb"), 4)
    for i in range(n):
        student = f"student{i:03d}"
        folder = root / "submitted" / student / chapter
        folder.mkdir(parents=True)
        nb = wrong
        if i % 2 == 0:
            nb, answers = copy.deepcopy(src), answer_sources(chapter, student)
            for cell in nb.cells:
                grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")
                cell.source = answers.get(grade_id, cell.source)
        nbformat.write(nb, str(folder / f"{chapter}.ipynb"))
    return src


def bare_execution(nb, cwd: Path, repeats: int) -> float:
    """Mean seconds of a bare kernel start + execution of ``nb`` (nbclient, no sandbox)."""
    from nbclient import NotebookClient

    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        NotebookClient(copy.deepcopy(nb), timeout=120, kernel_name="python3",
                       resources={"metadata": {"path": str(cwd)}}).execute()
        times.append(time.perf_counter() - started)
    return sum(times) / len(times)


def _loadavg() -> str:
    """The machine's load average (other work skews absolute times; the ratios are what count)."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=40, help="submissions (half right, half wrong)")
    parser.add_argument("--chapter", default="ch02_gradient_accumulation")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--bare-repeats", type=int, default=3)
    args = parser.parse_args(argv)
    cores = len(os.sched_getaffinity(0))
    load_before = _loadavg()
    with tempfile.TemporaryDirectory(prefix="bench-autograder-") as tmp:
        plain, ours = Path(tmp) / "plain", Path(tmp) / "ours"
        for root in (plain, ours):
            make_course(root, args.chapter, plain=root == plain)
            nb = submissions(root, args.chapter, args.n)
        t_plain_grade = _nbgrader(plain, "autograde", args.chapter, "--force")
        t_plain_feedback = _nbgrader(plain, "generate_feedback", args.chapter, "--force")
        cmd = [sys.executable, "-m", "autograder", "class", args.chapter, "--course-root", str(ours),
               "--out", str(ours), "--no-progress", "--seed", "1"]
        if args.workers:
            cmd += ["--workers", str(args.workers)]
        t_ours = _run(cmd, ours)
        t_ours_grades = _run(cmd + ["--no-feedback", "--out", str(ours / "no-feedback")], ours)
        data = json.loads((ours / "grades.json").read_text())
        data_no_feedback = json.loads((ours / "no-feedback" / "grades.json").read_text())
        bare = bare_execution(nb, ours / "source" / args.chapter, args.bare_repeats)
    per_sub = [r["seconds"] for r in data["students"]]
    scores = sorted({r["score"] for r in data["students"]})
    t_plain = t_plain_grade + t_plain_feedback
    print(f"chapter {args.chapter}, {args.n} submissions (half right, half wrong), {cores} cores, "
          f"isolation {data['isolation']}, scores seen {scores}")
    print(f"load average (1, 5, 15 min) before: {load_before}, after: {_loadavg()}")
    print(f"plain nbgrader autograde:                {t_plain_grade:8.1f} s")
    print(f"plain nbgrader autograde + feedback:     {t_plain:8.1f} s")
    print(f"course-autograde (sandbox, judge, fb):   {t_ours:8.1f} s")
    print(f"course-autograde --no-feedback:          {t_ours_grades:8.1f} s")
    print(f"ratio, both with feedback:   plain {t_plain:.1f} s / ours {t_ours:.1f} s = {t_plain / t_ours:.2f}x")
    print(f"ratio, both without:         plain {t_plain_grade:.1f} s / ours {t_ours_grades:.1f} s = "
          f"{t_plain_grade / t_ours_grades:.2f}x")
    mean = sum(per_sub) / len(per_sub)
    print(f"bare kernel start + execution:           {bare:8.2f} s per notebook")
    print(f"autograder per submission (one worker):  {mean:8.2f} s -> overhead {mean - bare:+.2f} s "
          f"({mean / bare:.2f}x bare)")
    print_phases({"with feedback": data["students"], "--no-feedback": data_no_feedback["students"]})
    return 0


def print_phases(runs: dict) -> None:
    """Mean seconds per submission of each phase of ``grades.json``'s ``phases``, one column per run."""
    names = []
    for rows in runs.values():
        for row in rows:
            names += [name for name in row.get("phases", {}) if name not in names]
    if not names:
        print("(grades.json has no per-phase times)")
        return
    print("\nmean seconds per submission, by phase (kernel and clean room run inside sandbox, side by side):")
    print(f"  {'phase':<12}" + "".join(f"{label:>16}" for label in runs))
    for name in names + ["total"]:
        cells = []
        for rows in runs.values():
            values = [row["seconds"] if name == "total" else row.get("phases", {}).get(name) for row in rows]
            values = [v for v in values if v is not None]
            cells.append(f"{sum(values) / len(values):>16.3f}" if values else f"{'-':>16}")
        print(f"  {name:<12}" + "".join(cells))


if __name__ == "__main__":
    sys.exit(main())
