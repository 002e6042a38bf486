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
``course-autograde on-submit queue ASSIGNMENT`` prints the queue.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Dict, List, Optional

from ..records import term

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
    from course.labs.activity import labs

    return assignment in {lab.name for lab in labs().values()}


def queue(root, assignment: str) -> Dict[str, dict]:
    path = term.grades_dir(root, assignment) / QUEUE
    return json.loads(path.read_text()) if path.is_file() else {}


def _save_queue(root, assignment: str, entries: Dict[str, dict]) -> None:
    _atomic_write(term.grades_dir(root, assignment) / QUEUE, entries)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def exchange_inbound(root) -> Path:
    """``<exchange root>/<course id>/inbound`` from the course's nbgrader configuration."""
    from nbgrader.apps import NbGrader

    cwd = os.getcwd()
    os.chdir(root)
    try:
        app = NbGrader()
        app.load_config_file()
        config = app.config
    finally:
        os.chdir(cwd)
    exchange = config.Exchange.get("root") or os.environ.get("NBGRADER_EXCHANGE") or "/srv/nbgrader/exchange"
    course_id = config.CourseDirectory.get("course_id") or config.Exchange.get("course_id")
    if not course_id:
        raise ValueError("nbgrader_config.py sets no CourseDirectory.course_id: grading on submit needs it")
    return Path(exchange) / course_id / "inbound"


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


def _nbgrader(root, *args: str) -> subprocess.CompletedProcess:
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    return subprocess.run([sys.executable, "-m", "nbgrader", *args, "--log-level=ERROR"], cwd=root,
                          capture_output=True, text=True, env=dict(os.environ, PATH=path), timeout=1800)


class Service:
    """One pass (:meth:`poll`) or a loop (:meth:`run`) over the opted-in assignments of a course root."""

    def __init__(self, root, log=None):
        import warnings

        warnings.filterwarnings("ignore", message=".*not in session.*")  # nbgrader's own SQLAlchemy noise
        self.root = Path(root).resolve()
        self.log = log or (lambda msg: print(msg, flush=True))
        self.inbound = exchange_inbound(self.root)

    def recover(self) -> None:
        """After a crash: an entry left ``grading`` is queued again (nothing of it was recorded)."""
        for assignment in settings(self.root):
            entries = queue(self.root, assignment)
            stuck = [k for k, e in entries.items() if e["state"] == "grading"]
            for key in stuck:
                entries[key].update(state="queued", updated=_now(), note="the service stopped while grading it")
            if stuck:
                _save_queue(self.root, assignment, entries)
                self.log(f"{assignment}: {len(stuck)} submission(s) interrupted while grading are queued again")

    def poll(self) -> int:
        """Queue new arrivals, grade what is queued, release what should be; returns submissions graded."""
        graded = 0
        for assignment, options in settings(self.root).items():
            entries = queue(self.root, assignment)
            for item in arrivals(self.inbound, assignment):
                if item["key"] not in entries:
                    entries[item["key"]] = {"student": item["student"], "submitted": item["timestamp"],
                                            "state": "queued", "updated": _now()}
                    self.log(f"{assignment}: {item['student']}'s submission of {item['timestamp']} queued")
            _save_queue(self.root, assignment, entries)
            for key in sorted((k for k, e in entries.items() if e["state"] == "queued"),
                              key=lambda k: entries[k]["submitted"]):
                self._grade(assignment, options, entries, key)
                graded += 1
            for key, entry in entries.items():
                if entry["state"] == "graded" and not options.get("hold"):
                    self._release(assignment, entries, key)
        return graded

    def _set(self, assignment: str, entries: Dict[str, dict], key: str, **values) -> None:
        entries[key].update(values, updated=_now())
        _save_queue(self.root, assignment, entries)

    def _grade(self, assignment: str, options: dict, entries: Dict[str, dict], key: str) -> None:
        from ..records import late
        from ..grading.grader import Grader
        from ..records.grades import summary_line
        from ..grading.submissions import collected

        entry = entries[key]
        student = entry["student"]
        newer = [k for k, e in entries.items() if e["student"] == student and e["submitted"] > entry["submitted"]]
        if newer:  # nbgrader collect takes the newest: that one is graded in its turn
            self._set(assignment, entries, key, state="superseded", note=f"a newer submission arrived ({newer[0]})")
            return
        self._set(assignment, entries, key, state="grading")
        done = _nbgrader(self.root, "collect", assignment, f"--student={student}", "--update")
        folder = self.root / "submitted" / student / assignment
        if done.returncode != 0 or not folder.is_dir():
            self._set(assignment, entries, key, state="failed",
                      note=f"nbgrader collect failed: {(done.stderr or done.stdout)[-300:]}")
            return
        grader = Grader(self.root, assignment, workers=1, seed=options["seed"], log=self.log)
        started = time.monotonic()
        row = grader.grade_one(collected(student, folder, assignment))
        grades_json = term.find_grades_json(self.root, assignment)
        previous = json.loads(grades_json.read_text()) if grades_json else {}
        recorded = previous.get("late_policy") or {}
        policy = late.LatePolicy(**recorded.get("policy", {}))
        due = late.parse_time(recorded["due"]) if recorded.get("due") else _gradebook_due(self.root, assignment)
        row = late.apply([row], {student: collected(student, folder, assignment).timestamp}, due, policy,
                         term.read_extensions(self.root, assignment))[0]
        term.record_rows(self.root, assignment, [row],
                         {"assignment": assignment, "seed": options["seed"], "isolation": grader.isolation,
                          "limits": vars(grader.limits), "shard": "on-submit",
                          "late_policy": {"policy": vars(policy), "due": due.isoformat() if due else None}})
        term.add_late_notes(self.root / "feedback", assignment, [row])
        self.log(summary_line(row, grader.isolation, options["seed"]))
        state = "failed" if row["status"] == "error" else "graded"
        self._set(assignment, entries, key, state=state, score=row["score"], max_score=row["max_score"],
                  seconds=round(time.monotonic() - started, 1),
                  note=row["reason"] if row["status"] != "graded" else "")

    def _release(self, assignment: str, entries: Dict[str, dict], key: str) -> None:
        student = entries[key]["student"]
        done = _nbgrader(self.root, "release_feedback", assignment, f"--student={student}")
        if done.returncode != 0:
            self.log(f"{assignment}: releasing {student}'s feedback failed: {(done.stderr or done.stdout)[-300:]}")
            return
        self._set(assignment, entries, key, state="released")
        self.log(f"{assignment}: {student}'s feedback released")

    def release_held(self, assignment: str) -> int:
        """The instructor's release of a held assignment's graded feedback; returns how many."""
        entries = queue(self.root, assignment)
        keys = [k for k, e in entries.items() if e["state"] == "graded"]
        for key in keys:
            self._release(assignment, entries, key)
        return len(keys)

    def run(self, interval: float = 10.0) -> None:
        self.recover()
        self.log(f"grading on submit in {self.root}: watching {self.inbound} every {interval:g} s for "
                 f"{', '.join(settings(self.root)) or 'no assignment yet (course-autograde on-submit enable NAME)'}")
        try:
            while True:
                try:
                    self.poll()
                except Exception as exc:  # noqa: BLE001 (the service keeps watching; the queue keeps its state)
                    self.log(f"grading on submit: {type(exc).__name__}: {exc}")
                time.sleep(interval)
        except KeyboardInterrupt:  # the hub stopping its services: the queue on disk says where it was
            self.log("grading on submit: stopped")


def _gradebook_due(root: Path, assignment: str):
    from nbgrader.api import Gradebook, MissingEntry

    from ..records.late import parse_time

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        try:
            duedate = gb.find_assignment(assignment).duedate
        except MissingEntry:
            return None
    return parse_time(duedate.isoformat()) if duedate else None


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
        entries = queue(root, args.assignment)
        for key, e in sorted(entries.items(), key=lambda kv: kv[1]["submitted"]):
            score = f" {e['score']:g}/{e['max_score']:g}" if e.get("score") is not None else ""
            print(f"{e['submitted']}  {e['student']:<20} {e['state']:<10}{score}  {e.get('note', '')}".rstrip())
        print(f"{len(entries)} submission(s) of {args.assignment}")
        return 0
    service = Service(root)
    if args.action == "release":
        print(f"{args.assignment}: released the feedback of {service.release_held(args.assignment)} submission(s)")
        return 0
    if args.action == "once":
        service.recover()
        print(f"graded {service.poll()} submission(s)")
        return 0
    service.run(args.interval)
    return 0
