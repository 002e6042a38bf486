"""Benchmark: grading on submit at a deadline, Submit -> released feedback for a burst of submissions.

A course root with one workbook chapter is released into a local nbgrader exchange; the grading-on-submit
service (``course-autograde on-submit run``, the process the hub runs) watches it. Then

1. **baseline**: one student submits alone; its Submit -> released feedback is the time one submission
   takes when nothing else is waiting (same machine, same run, same load);
2. **burst**: ``--n`` students (default 40, each with their own variant's correct answers) submit within
   ``--within`` seconds (default 60), through nbgrader's own exchange code; the service grades them with
   ``--workers`` sandboxes at a time, once for each value given (default ``1,2``).

For each submission, Submit -> released is the time between its exchange timestamp (nbgrader's submit)
and the service writing ``released_at`` in the queue, after ``nbgrader release_feedback`` put its
feedback where ``fetch_feedback`` finds it. Printed per worker count: median, p95 and last (the whole
burst's wait), each also as a ratio to the baseline; the speed-up of the last between worker counts;
every submission graded exactly once (none lost, none twice); the load average before and after.
No assertion on times: the numbers are for the reader.

    .venv/bin/python benchmarks/bench_on_submit_burst.py [--n 40] [--within 60] [--workers 1,2]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CHAPTER = "ch02_gradient_accumulation"
COURSE_ID = "distributed-training"


def _env(exchange: Path) -> dict:
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    return dict(os.environ, PATH=path, PYTHONHASHSEED="0", NBGRADER_EXCHANGE=str(exchange))


def _run(cmd, cwd, env) -> str:
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, cmd))} failed:\n{proc.stdout[-1000:]}\n{proc.stderr[-2000:]}")
    return proc.stdout


def make_course(base: Path) -> tuple:
    """A course root with the chapter generated and released into a fresh exchange; its students' home."""
    root, exchange, home = base / "course", base / "exchange", base / "home"
    for folder in (root, exchange, home):
        folder.mkdir(parents=True)
    shutil.copy(ROOT / "nbgrader_config.py", root / "nbgrader_config.py")
    shutil.copytree(ROOT / "source" / CHAPTER, root / "source" / CHAPTER)
    env = _env(exchange)
    nbgrader = [sys.executable, "-m", "nbgrader"]
    _run([*nbgrader, "generate_assignment", CHAPTER, "--force", "--log-level=ERROR"], root, env)
    _run([*nbgrader, "release_assignment", CHAPTER, "--log-level=ERROR"], root, env)
    _run([sys.executable, "-m", "autograder", "on-submit", "enable", CHAPTER], root, env)
    return root, exchange, home, env


def _answers(root: Path, student: str):
    from tests.assignments.nbgrader_course import honest_answers

    nb = nbformat.read(str(root / "source" / CHAPTER / f"{CHAPTER}.ipynb"), 4)
    answers = honest_answers(CHAPTER, student)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")
            cell.source = answers.get(gid, cell.source)
    return nb


def prepare(root: Path, home: Path, students) -> None:
    """Each student's finished notebook in their own folder, before the clock starts."""
    for student in students:
        folder = home / student / CHAPTER
        folder.mkdir(parents=True)
        nbformat.write(_answers(root, student), str(folder / f"{CHAPTER}.ipynb"))


def submit(home: Path, exchange: Path, student: str) -> None:
    """``nbgrader submit CHAPTER --student STUDENT``, through nbgrader's own exchange code, in this process
    (40 interpreter start-ups would spread the burst over minutes on a small machine)."""
    from nbgrader.auth import Authenticator
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.exchange.default.submit import ExchangeSubmit
    from traitlets.config import Config

    config = Config()
    config.Exchange.root = str(exchange)
    config.Exchange.assignment_dir = str(home / student)
    config.Exchange.cache = str(home / student / ".cache")
    config.CourseDirectory.course_id = COURSE_ID
    config.CourseDirectory.assignment_id = CHAPTER
    config.CourseDirectory.student_id = student
    ExchangeSubmit(coursedir=CourseDirectory(config=config), authenticator=Authenticator(config=config),
                   config=config).start()


def queue(root: Path) -> dict:
    path = root / "grades" / CHAPTER / "queue.json"
    try:
        return json.loads(path.read_text()) if path.is_file() else {}
    except ValueError:  # caught between the service's write and its rename: read again
        return {}


def run_burst(root: Path, home: Path, exchange: Path, env: dict, students, within: float, workers: int,
              timeout: float) -> dict:
    """Start the service, submit ``students`` spread over ``within`` seconds, wait until every one is
    released; return the queue's entries of these students."""
    from autograder.records.late import parse_time

    log = root / f"service-{workers}-{len(students)}.log"
    with open(log, "w") as out:
        service = subprocess.Popen([sys.executable, "-m", "autograder", "on-submit", "run", "--interval", "1",
                                    "--workers", str(workers)], cwd=root, env=env, stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    try:
        started = time.monotonic()  # the hub's service is running before the deadline: wait until it watches
        while "watching" not in log.read_text() and time.monotonic() - started < 300:
            time.sleep(0.2)
        gap = within / max(1, len(students) - 1) if len(students) > 1 else 0.0
        submitter = threading.Thread(target=lambda: [
            (submit(home, exchange, s), time.sleep(gap)) for s in students])
        submitter.start()
        deadline = time.monotonic() + timeout
        wanted = set(students)
        while time.monotonic() < deadline:
            entries = {k: e for k, e in queue(root).items() if e["student"] in wanted}
            done = [e for e in entries.values() if e["state"] in ("released", "failed")]
            if len(done) == len(wanted) and not submitter.is_alive():
                break
            time.sleep(0.5)
        submitter.join()
    finally:
        os.killpg(service.pid, signal.SIGTERM)
        try:
            service.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(service.pid, signal.SIGKILL)
            service.wait()
    entries = [e for e in queue(root).values() if e["student"] in set(students)]
    for e in entries:
        e["to_feedback"] = ((parse_time(e["released_at"]) - parse_time(e["submitted"])).total_seconds()
                            if e.get("released_at") else None)
        e["to_start"] = ((parse_time(e["started"]) - parse_time(e["submitted"])).total_seconds()
                         if e.get("started") else None)
        e["release"] = ((parse_time(e["released_at"]) - parse_time(e["graded_at"])).total_seconds()
                        if e.get("released_at") and e.get("graded_at") else None)
    return {"entries": entries}


def p95(values):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=40, help="submissions in the burst")
    parser.add_argument("--within", type=float, default=60.0, help="seconds over which they arrive")
    parser.add_argument("--workers", default="1,2", help="worker counts to compare, e.g. 1,2")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds to wait for one burst")
    args = parser.parse_args()
    counts = [int(w) for w in args.workers.split(",")]
    print(f"load average before: {' '.join(open('/proc/loadavg').read().split()[:3])}; "
          f"cores available: {len(os.sched_getaffinity(0))}")
    from autograder.isolation import sandbox

    why = sandbox.probe()
    print(f"isolation: {'bwrap+rlimits' if why is None else 'rlimits only (' + why + ')'}")
    if why is not None:
        os.environ.setdefault("COURSE_ALLOW_UNSANDBOXED", "1")  # a benchmark here says so above
    results = {}
    with tempfile.TemporaryDirectory(prefix="bench-on-submit-") as tmp:
        root, exchange, home, env = make_course(Path(tmp))
        env = dict(env, COURSE_ALLOW_UNSANDBOXED=os.environ.get("COURSE_ALLOW_UNSANDBOXED", ""))
        every = ["solo"] + [f"w{w}_s{i:02d}" for w in counts for i in range(args.n)]
        prepare(root, home, every)
        solo = run_burst(root, home, exchange, env, ["solo"], 0.0, 1, args.timeout)["entries"]
        baseline = solo[0]["to_feedback"]
        print(f"baseline (one submission alone, 1 worker): Submit -> released {baseline:.1f} s (Submit -> "
              f"grading started {solo[0]['to_start']:.1f} s, graded in {solo[0]['seconds']:.1f} s, graded -> "
              f"released {solo[0]['release']:.1f} s)")
        for workers in counts:
            students = [f"w{workers}_s{i:02d}" for i in range(args.n)]
            entries = run_burst(root, home, exchange, env, students, args.within, workers, args.timeout)["entries"]
            times = [e["to_feedback"] for e in entries if e["to_feedback"] is not None]
            states = {s: sum(e["state"] == s for e in entries) for s in ("released", "failed", "queued", "grading")}
            per_student = {}
            for e in entries:
                per_student[e["student"]] = per_student.get(e["student"], 0) + 1
            twice = [s for s, c in per_student.items() if c > 1]
            lost = sorted(set(students) - set(per_student))
            if not times:
                print(f"{workers} worker(s): nothing released ({states})")
                continue
            row = {"median": statistics.median(times), "p95": p95(times), "last": max(times),
                   "grading": statistics.median(e["seconds"] for e in entries if e.get("seconds")),
                   "waited": statistics.median(e["to_start"] for e in entries if e.get("to_start") is not None)}
            results[workers] = row
            print(f"{workers} worker(s), burst of {args.n} within {args.within:g} s: Submit -> released "
                  f"median {row['median']:.1f} s ({row['median'] / baseline:.1f}x baseline), "
                  f"p95 {row['p95']:.1f} s ({row['p95'] / baseline:.1f}x), "
                  f"last {row['last']:.1f} s ({row['last'] / baseline:.1f}x); median Submit -> grading started "
                  f"{row['waited']:.1f} s, median grading {row['grading']:.1f} s; "
                  f"{states['released']} released, {states['failed']} failed, {len(lost)} lost, "
                  f"{len(twice)} graded twice; load average now "
                  f"{' '.join(open('/proc/loadavg').read().split()[:3])}")
    if len(results) > 1:
        first, *rest = sorted(results)
        for workers in rest:
            print(f"{first} -> {workers} workers: last released {results[first]['last'] / results[workers]['last']:.2f}x "
                  f"sooner, median {results[first]['median'] / results[workers]['median']:.2f}x")
    print(f"load average after: {' '.join(open('/proc/loadavg').read().split()[:3])}")


if __name__ == "__main__":
    main()
