"""Grading on submit (opt-in per assignment): each submission is graded as it arrives.

``course-autograde on-submit enable ASSIGNMENT [--hold]`` opts an assignment in (kept in
``grades/on-submit.json``); ``course-autograde on-submit run`` is the service (on the hub, a
JupyterHub service running as the instructor, ``hub/jupyterhub_config.py``) that watches nbgrader's
exchange: for each new submission of an opted-in assignment it collects it (``nbgrader collect
--student --update``), grades it with the course's grader (the same sandbox, clean room and judge
as ``course-autograde class``, one probe seed per assignment), applies the late policy and
extensions, records the row in ``grades/<assignment>/`` and the gradebook, and releases the
student's feedback (``nbgrader release_feedback --student``): at once for a workbook chapter,
held for a lab until the instructor runs ``course-autograde on-submit release ASSIGNMENT``.

The queue, ``grades/<assignment>/queue.json``, holds every submission seen (by its exchange folder
name) and its state: ``queued``, ``grading``, ``graded`` (feedback held), ``released``,
``superseded`` (a newer one of the same student arrived first), ``failed``. Every change is
written to disk (atomically) before the next step, so a crash or restart loses no submission: a
``grading`` entry is graded again (nothing of it was recorded), a ``graded`` one whose feedback
should go out is released, and nothing in a later state is ever graded again.
``course-autograde on-submit queue ASSIGNMENT`` prints the queue: each submission's state, how long
it waited for a worker, how long it took to grade and from Submit to released feedback, and the
queue's depth. A deadline's burst is graded ``--workers`` at a time (default: the cores given),
each submission once, in the order submitted.
"""

from __future__ import annotations

import json
import os
import queue as queue_module
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path
from typing import Dict, List, Optional

from ..records import term
from ..records.exchange import course_config, exchange_inbound  # noqa: F401 (exchange_inbound: this module's API too)

SETTINGS = "on-submit.json"
QUEUE = "queue.json"
STATES = ("queued", "grading", "graded", "released", "superseded", "failed")


def _atomic_write(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)


def settings(root) -> Dict[str, dict]:
    """``{assignment: {"hold": bool, "seed": int}}`` of the opted-in assignments."""
    path = Path(root) / term.GRADES / SETTINGS
    return json.loads(path.read_text()) if path.is_file() else {}


def enable(root, assignment: str, hold: Optional[bool] = None, disable: bool = False) -> dict:
    """Opt ``assignment`` in (``hold``: feedback waits for the instructor; default: held for a lab,
    released at once otherwise) or out (``disable``)."""
    term.grades_dir(root, assignment)  # checks the name
    path = Path(root) / term.GRADES / SETTINGS
    with term.locked(path.parent):
        current = settings(root)
        if disable:
            current.pop(assignment, None)
        else:
            entry = current.get(assignment, {})
            entry["hold"] = is_lab(assignment) if hold is None else bool(hold)
            entry.setdefault("seed", random.SystemRandom().randrange(2**31))
            current[assignment] = entry
        _atomic_write(path, current)
    return current.get(assignment, {})


def is_lab(assignment: str) -> bool:
    """A lab (or the tutorial) holds its feedback: its reflections are graded by hand first."""
    from course.notebook_api.lab_session import labs

    return assignment in {lab.name for lab in labs().values()}


def queue(root, assignment: str) -> Dict[str, dict]:
    path = term.grades_dir(root, assignment) / QUEUE
    return json.loads(path.read_text()) if path.is_file() else {}


def _save_queue(root, assignment: str, entries: Dict[str, dict]) -> None:
    _atomic_write(term.grades_dir(root, assignment) / QUEUE, entries)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def arrivals(inbound: Path, assignment: str) -> List[dict]:
    """Submissions of ``assignment`` in the exchange's inbound folder (``student+assignment+time+random``)."""
    found = []
    if not inbound.is_dir():
        return found
    for entry in sorted(inbound.iterdir()):
        parts = entry.name.split("+")
        if len(parts) < 3 or parts[1] != assignment or not entry.is_dir():
            continue
        found.append({"key": entry.name, "student": parts[0], "timestamp": parts[2]})
    return found


class Exchange:
    """nbgrader's collect and release_feedback for one student, in this process (nbgrader's own API,
    what the formgrader's buttons call): milliseconds each instead of an interpreter start-up, which
    a deadline's burst would otherwise pay twice per submission. One at a time (nbgrader's API
    changes its CourseDirectory while it runs)."""

    def __init__(self, root):
        from nbgrader.apps.api import NbGraderAPI
        from nbgrader.coursedir import CourseDirectory

        config = course_config(root)
        config.CourseDirectory.root = str(root)
        self.api = NbGraderAPI(CourseDirectory(config=config), config=config)
        self.lock = threading.Lock()

    def _run(self, kind: str, assignment: str, student: str, **traits) -> Optional[str]:
        """``None`` on success, else nbgrader's error and log (the end of them)."""
        from nbgrader.utils import capture_log, temp_attrs

        with self.lock, temp_attrs(self.api.coursedir, assignment_id=assignment, student_id=student):
            app = getattr(self.api.exchange, kind)(coursedir=self.api.coursedir,
                                                   authenticator=self.api.authenticator, parent=self.api)
            for name, value in traits.items():
                setattr(app, name, value)
            result = capture_log(app)
        return None if result.get("success") else (result.get("error") or result.get("log") or "failed")[-300:]

    def collect(self, assignment: str, student: str) -> Optional[str]:
        return self._run("Collect", assignment, student, update=True)

    def release_feedback(self, assignment: str, student: str) -> Optional[str]:
        return self._run("ReleaseFeedback", assignment, student)


def _seconds_between(start: Optional[str], end: Optional[str]) -> Optional[float]:
    from ..records.late import parse_time

    try:
        return round((parse_time(end) - parse_time(start)).total_seconds(), 1)
    except (TypeError, ValueError):
        return None


def _stamp() -> str:
    """Now, to the millisecond (queue times are compared with the submission's own)."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


class Service:
    """One pass (:meth:`poll`) or a loop (:meth:`run`) over the opted-in assignments of a course root.

    Submissions are graded ``workers`` at a time (default: the cores this process may use), each in
    its own sandbox slot, by one :class:`~autograder.grading.grader.Grader` per assignment; each is released
    as soon as it is graded, while the others grade. Every state change is written to the queue file
    at once, with its time: ``arrived`` (seen by the service), ``started``, ``graded_at``,
    ``released_at``; ``waited`` is the seconds it sat in the queue, ``seconds`` its grading.
    """

    def __init__(self, root, log=None, workers: Optional[int] = None, allow_unsandboxed: Optional[bool] = None):
        import warnings

        warnings.filterwarnings("ignore", message=".*not in session.*")  # nbgrader's own SQLAlchemy noise
        self.root = Path(root).resolve()
        self.log = log or (lambda msg: print(msg, flush=True))
        self.inbound = exchange_inbound(self.root)
        self.workers = workers or len(os.sched_getaffinity(0))
        if type(self.workers) is not int or self.workers < 1:
            raise ValueError(f"workers must be a whole number >= 1, got {workers!r}")
        self.allow_unsandboxed = allow_unsandboxed
        self.exchange = Exchange(self.root)
        self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="on-submit")
        self._slots: "queue_module.Queue[int]" = queue_module.Queue()
        for slot in range(self.workers):
            self._slots.put(slot)
        self._graders: Dict[str, object] = {}
        self._lock = threading.RLock()  # the queue files and the set of submissions in flight
        self._in_flight: set = set()
        self._futures: list = []

    def recover(self) -> None:
        """After a crash: an entry left ``grading`` is queued again (nothing of it was recorded)."""
        for assignment in settings(self.root):
            with self._lock:
                entries = queue(self.root, assignment)
                stuck = [k for k, e in entries.items() if e["state"] == "grading"]
                for key in stuck:
                    entries[key].update(state="queued", updated=_now(), note="the service stopped while grading it")
                if stuck:
                    _save_queue(self.root, assignment, entries)
            if stuck:
                self.log(f"{assignment}: {len(stuck)} submission(s) interrupted while grading are queued again")

    def poll(self, wait: bool = True) -> int:
        """Queue new arrivals and hand what is queued to the workers; release what should be.
        ``wait``: return when all of it is graded (else at once: :meth:`run` looks again meanwhile).
        Returns the submissions handed to the workers."""
        handed = 0
        for assignment, options in settings(self.root).items():
            with self._lock:
                entries = queue(self.root, assignment)
                for item in arrivals(self.inbound, assignment):
                    if item["key"] not in entries:
                        entries[item["key"]] = {"student": item["student"], "submitted": item["timestamp"],
                                                "state": "queued", "arrived": _stamp(), "updated": _now()}
                        self.log(f"{assignment}: {item['student']}'s submission of {item['timestamp']} queued")
                waiting = sorted((k for k, e in entries.items()
                                  if e["state"] == "queued" and (assignment, k) not in self._in_flight),
                                 key=lambda k: entries[k]["submitted"])
                for key in waiting:  # nbgrader collect takes a student's newest: older ones never get graded
                    entry = entries[key]
                    newer = [k for k, e in entries.items()
                             if e["student"] == entry["student"] and e["submitted"] > entry["submitted"]]
                    if newer:
                        entry.update(state="superseded", updated=_now(), note=f"a newer submission arrived ({newer[0]})")
                _save_queue(self.root, assignment, entries)
                todo = [k for k in waiting if entries[k]["state"] == "queued"]
                self._in_flight.update((assignment, k) for k in todo)
                leftovers = [k for k, e in entries.items() if e["state"] == "graded" and not options.get("hold")
                             and (assignment, k) not in self._in_flight]
            if todo:
                self.log(f"{assignment}: {len(todo)} submission(s) to grade, {self.workers} worker(s)")
            for key in todo:
                self._futures.append(self._pool.submit(self._grade, assignment, options, key))
                handed += 1
            for key in leftovers:  # graded before a restart, its release not done
                self._release(assignment, key)
        if wait:
            self.wait()
        return handed

    def wait(self) -> None:
        """Until every submission handed to the workers is done."""
        futures, self._futures = self._futures, []
        for future in futures:
            future.result()

    def _update(self, assignment: str, key: str, **values) -> dict:
        with self._lock:
            entries = queue(self.root, assignment)
            entries[key].update(values, updated=_now())
            _save_queue(self.root, assignment, entries)
            return dict(entries[key])

    def _grader(self, assignment: str, options: dict):
        from ..grading.grader import Grader

        with self._lock:
            if assignment not in self._graders:
                grader = Grader(self.root, assignment, workers=self.workers, seed=options["seed"],
                                log=self.log, allow_unsandboxed=self.allow_unsandboxed)
                if self.workers > 1:  # feedback rendered in processes of its own, as grade_all does: the
                    # workers are threads of this process, and rendering is Python (one core for all of them)
                    from ..grading.grader import _FeedbackWorkers

                    grader._feedback_pool = _FeedbackWorkers(max(1, self.workers // 2))
                self._graders[assignment] = grader
            return self._graders[assignment]

    def _grade(self, assignment: str, options: dict, key: str) -> None:
        slot = self._slots.get()
        try:
            self._grade_in(assignment, options, key, slot)
        except Exception as exc:  # noqa: BLE001 (the entry says why; the service keeps grading the others)
            self._update(assignment, key, state="failed", note=f"{type(exc).__name__}: {str(exc)[:300]}")
            self.log(f"{assignment}: grading {key} failed: {type(exc).__name__}: {exc}")
        finally:
            self._slots.put(slot)
            with self._lock:
                self._in_flight.discard((assignment, key))

    def _grade_in(self, assignment: str, options: dict, key: str, slot: int) -> None:
        from ..grading.submissions import collected
        from ..records import policy
        from ..records.grades import summary_line

        started = _stamp()
        with self._lock:  # graded once: only an entry still queued is taken
            if queue(self.root, assignment).get(key, {}).get("state") != "queued":
                return
            entry = self._update(assignment, key, state="grading", started=started,
                                 waited=_seconds_between(self._arrived(assignment, key), started))
        student = entry["student"]
        failed = self.exchange.collect(assignment, student)
        grader = self._grader(assignment, options)
        folder = grader.course.folder("submitted", student, assignment)  # where nbgrader collected it
        if failed is not None or not folder.is_dir():
            self._update(assignment, key, state="failed", note=f"nbgrader collect failed: {failed}")
            return
        clock = time.monotonic()
        sub = collected(student, folder, assignment)
        row = grader.grade_one(sub, slot)
        # the assignment's grade policy (due date, late rule, extensions), as every route applies it
        row = policy.record(self.root, assignment, [row], {student: sub.timestamp},
                            {"assignment": assignment, "seed": options["seed"], "isolation": grader.isolation,
                             "limits": vars(grader.limits), "shard": "on-submit"}, log=self.log)[0]
        term.add_late_notes(self.root, assignment, [row])
        self.log(summary_line(row, grader.isolation, options["seed"]))
        state = "failed" if row["status"] == "error" else "graded"
        self._update(assignment, key, state=state, score=row["score"], max_score=row["max_score"],
                     final_score=(row.get("late") or {}).get("final_score", row["score"]),
                     waiting_parts=sum(p["status"] == "manual" for p in row["parts"]),
                     seconds=round(time.monotonic() - clock, 1), graded_at=_stamp(),
                     note=row["reason"] if row["status"] != "graded" else "")
        if state == "graded" and not options.get("hold"):
            self._release(assignment, key)

    def _arrived(self, assignment: str, key: str) -> Optional[str]:
        entry = queue(self.root, assignment).get(key, {})
        return entry.get("arrived") or entry.get("submitted")

    def _release(self, assignment: str, key: str) -> None:
        student = queue(self.root, assignment)[key]["student"]
        failed = self.exchange.release_feedback(assignment, student)
        if failed is not None:
            self.log(f"{assignment}: releasing {student}'s feedback failed: {failed}")
            return
        self._update(assignment, key, state="released", released_at=_stamp())
        self.log(f"{assignment}: {student}'s feedback released")

    def release_held(self, assignment: str) -> int:
        """The instructor's release of a held assignment's graded feedback; returns how many."""
        keys = [k for k, e in queue(self.root, assignment).items() if e["state"] == "graded"]
        for key in keys:
            self._release(assignment, key)
        return len(keys)

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        for grader in self._graders.values():
            if grader._feedback_pool is not None:
                grader._feedback_pool.close()
                grader._feedback_pool = None

    def run(self, interval: float = 10.0) -> None:
        self.recover()
        for assignment, options in settings(self.root).items():  # ready before the first submission arrives
            try:
                self._grader(assignment, options)
            except ValueError as exc:  # said again, per submission, when one arrives
                self.log(f"{assignment}: {exc}")
        self.log(f"grading on submit in {self.root} with {self.workers} worker(s): watching {self.inbound} every "
                 f"{interval:g} s for "
                 f"{', '.join(settings(self.root)) or 'no assignment yet (course-autograde on-submit enable NAME)'}")
        try:
            while True:
                try:
                    self.poll(wait=False)
                    self._futures = [f for f in self._futures if not f.done()]
                except Exception as exc:  # noqa: BLE001 (the service keeps watching; the queue keeps its state)
                    self.log(f"grading on submit: {type(exc).__name__}: {exc}")
                time.sleep(interval)
        except KeyboardInterrupt:  # the hub stopping its services: the queue on disk says where it was
            self.log("grading on submit: stopped")


def depth(entries: Dict[str, dict]) -> Dict[str, int]:
    """How many submissions are in each state (the queue's depth is ``queued`` + ``grading``)."""
    counts = {state: 0 for state in STATES}
    for entry in entries.values():
        counts[entry["state"]] = counts.get(entry["state"], 0) + 1
    return counts


def queue_lines(entries: Dict[str, dict]) -> List[str]:
    """The instructor's view: one line per submission (when, who, state, its wait in the queue, its
    grading, Submit to released feedback), then the depth."""
    lines = [f"{'submitted':<32} {'student':<20} {'state':<10} {'waited':>7} {'graded':>7} {'to feedback':>11}  "
             "score / note"]
    for _key, e in sorted(entries.items(), key=lambda kv: kv[1]["submitted"]):
        score = f"{e['final_score']:g}/{e['max_score']:g}" if e.get("final_score") is not None else (
            f"{e['score']:g}/{e['max_score']:g}" if e.get("score") is not None else "")
        if e.get("waiting_parts"):
            score += f" ({e['waiting_parts']} part(s) waiting for the instructor)"
        waited = e.get("waited")
        if waited is None and e["state"] == "queued":
            waited = _seconds_between(e.get("arrived"), _stamp())
        to_feedback = _seconds_between(e["submitted"], e.get("released_at"))
        cells = [f"{waited:g} s" if waited is not None else "",
                 f"{e['seconds']:g} s" if e.get("seconds") is not None else "",
                 f"{to_feedback:g} s" if to_feedback is not None else ""]
        lines.append(f"{e['submitted']:<32} {e['student']:<20} {e['state']:<10} {cells[0]:>7} {cells[1]:>7} "
                     f"{cells[2]:>11}  {score} {e.get('note', '')}".rstrip())
    counts = depth(entries)
    done = ", ".join(f"{counts[s]} {s}" for s in STATES[2:] if counts[s])
    lines.append(f"{len(entries)} submission(s); queue depth {counts['queued'] + counts['grading']} "
                 f"({counts['queued']} queued, {counts['grading']} grading)" + (f"; {done}" if done else ""))
    return lines


def add_parser(sub) -> None:
    p = sub.add_parser("on-submit", help="grading on submit: opt an assignment in, run the service, "
                                         "see the queue, release held feedback")
    p.add_argument("action", choices=["enable", "disable", "run", "once", "queue", "release"])
    p.add_argument("assignment", nargs="?", default=None)
    p.add_argument("--course-root", default=".", help="nbgrader course root")
    p.add_argument("--hold", action="store_true", default=None,
                   help="enable: hold feedback until `on-submit release` (default for labs)")
    p.add_argument("--no-hold", dest="hold", action="store_false",
                   help="enable: release feedback as soon as it is graded (default for chapters)")
    p.add_argument("--interval", type=float, default=10.0, help="run: seconds between looks at the exchange")
    p.add_argument("--workers", type=int, default=None,
                   help="run, once: submissions graded at a time, each in its own sandbox (default: the cores "
                        "this process may use)")
    p.add_argument("--allow-unsandboxed", action="store_true",
                   help="run, once: grade with rlimits only where bubblewrap cannot isolate the student's code "
                        "(UNSAFE; autograder/isolation/unsandboxed.py)")
    p.set_defaults(run=_main)


def _main(args) -> int:
    root = Path(args.course_root).resolve()
    if args.action in ("enable", "disable", "queue", "release") and not args.assignment:
        raise ValueError(f"on-submit {args.action} needs an ASSIGNMENT")
    if args.action in ("enable", "disable"):
        entry = enable(root, args.assignment, hold=args.hold, disable=args.action == "disable")
        if args.action == "disable":
            print(f"{args.assignment}: no longer graded on submit")
        else:
            print(f"{args.assignment}: graded on submit; feedback "
                  + ("held until `course-autograde on-submit release " + args.assignment + "`"
                     if entry["hold"] else "released as soon as it is graded"))
        return 0
    if args.action == "queue":
        print("\n".join(queue_lines(queue(root, args.assignment))))
        return 0
    service = Service(root, workers=args.workers, allow_unsandboxed=args.allow_unsandboxed or None)
    try:
        if args.action == "release":
            print(f"{args.assignment}: released the feedback of {service.release_held(args.assignment)} submission(s)")
            return 0
        if args.action == "once":
            service.recover()
            print(f"graded {service.poll()} submission(s)")
            return 0
        service.run(args.interval)
    finally:
        service.close()
    return 0
