"""The class report as plain data, from graded results, predictions.json and ledger exports.

Inputs, all written by the package or nbgrader:

* ``grades.json`` of each assignment (``course-autograde class``, or ``merge`` of shards);
* each submission's ``predictions.json`` (it travels with the notebook into nbgrader's
  ``submitted/<student>/<assignment>/``, or inside a ``<student>.zip``);
* optionally the design ledgers students shared (``<student>.json``, a copy of their
  ``~/.course/ledger.json``): visible-check attempts, passes, failure states hit.

What exists (locks, options, parts, acts, kinds) comes from :mod:`.catalog`; this module
only counts. The students counted in the item statistics are those with a submission the
grader could run or read (``status`` none of ``missing``, ``unreadable``, a file that is not a
notebook, and ``error``); the others are listed per student and counted in ``excluded``.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Dict, Iterable, List, Optional

from . import catalog, stats

#: submission states left out of the item statistics: nothing (readable) was submitted, or the grader failed
EXCLUDED_STATES = ("missing", "unreadable", "error")


def load_grades(path) -> dict:
    """One ``grades.json`` (a file, or a folder holding one)."""
    path = Path(path)
    file = path / "grades.json" if path.is_dir() else path
    try:
        data = json.loads(file.read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"grades must name a readable grades.json, got {str(file)!r} ({exc})") from None
    if not isinstance(data, dict) or "assignment" not in data or not isinstance(data.get("students"), list):
        raise ValueError(f"{file} is not a grades.json written by course-autograde")
    data["_path"] = str(file)
    return data


def find_grades(assignments: List[str], places: Iterable) -> Dict[str, dict]:
    """``{assignment: grades}`` from ``places`` (grades.json files, or folders searched with
    their immediate subfolders and ``grades/<assignment>/``, e.g. a course root holding
    ``grades/ch02/grades.json`` and ``merged/``).

    An assignment's own ``grades/<assignment>/grades.json`` is its class when a folder holds one: a
    stray copy elsewhere (an older version's root ``grades.json``) is not read then. Found in a folder,
    the grades of ``course-autograde single`` (one notebook) are never taken for a class.

    Raises ValueError when an assignment has none, or two different ones (name one with ``--grades``).
    """
    found: Dict[str, List[dict]] = {}
    own: Dict[str, List[dict]] = {}
    for place in places:
        place = Path(place)
        candidates = [place] if place.is_file() else (
            [place / "grades.json"] + sorted(p / "grades.json" for p in place.iterdir() if p.is_dir())
            + sorted((place / "grades").glob("*/grades.json"))  # each assignment's own folder
            if place.is_dir() else [])
        for file in candidates:
            if file.is_file():
                try:
                    data = load_grades(file)
                except ValueError:
                    continue
                if not place.is_file() and data.get("shard") == "single":
                    continue  # one notebook graded alone is not the class
                found.setdefault(data["assignment"], []).append(data)
                if place.is_dir() and file.parent == place / "grades" / data["assignment"]:
                    own.setdefault(data["assignment"], []).append(data)
    out = {}
    for name in assignments:
        options = own.get(name) or found.get(name, [])
        if not options:
            raise ValueError(f"no grades.json of {name!r} found (run `course-autograde class {name}` first, "
                             f"or name it with --grades)")
        # a CI shard ("2/3") holds part of the class: the merged (or unsharded) one is the class
        whole = [o for o in options if not _partial_shard(o.get("shard"))]
        if not whole:
            raise ValueError(f"only shards of {name!r} found ({', '.join(o['_path'] for o in options)}): "
                             f"run `course-autograde merge` on them first")
        distinct = {json.dumps(o["students"], sort_keys=True): o for o in whole}
        if len(distinct) > 1:
            raise ValueError(f"{len(distinct)} different grades.json hold {name!r} "
                             f"({', '.join(o['_path'] for o in distinct.values())}): name one with --grades")
        out[name] = whole[0]
    return out


def _partial_shard(shard) -> bool:
    """True for ``"k/n"`` with n > 1 (``merged``, ``single``, ``1/1`` and none are whole)."""
    parts = str(shard or "").split("/")
    return len(parts) == 2 and parts[1].strip().isdigit() and int(parts[1]) > 1


def _option(lock: dict, value):
    """The option id a stored prediction names: the id itself, or the letter a ``predictions.json``
    written before option ids stored (the option declared at that place); anything else as it is
    (counted as not an option)."""
    if value is None or value in lock["options"]:
        return value
    return lock.get("letters", {}).get(value, value)


def read_submitted_predictions(folder: Optional[Path], assignment: str) -> Dict[str, dict]:
    """``{student: {lock key: value}}`` from the submissions under ``folder`` (nbgrader's
    ``submitted/`` or a folder of ``<student>.ipynb``/``.zip``); read only, never changed."""
    from course.predictions_file import read_predictions

    from ..grading.submissions import discover

    if folder is None or not Path(folder).is_dir():
        return {}
    workdir = Path(tempfile.mkdtemp(prefix="classreport-unzip-"))
    try:
        return {sub.student: {k: v["value"] for k, v in read_predictions(sub.folder).items()}
                for sub in discover(Path(folder), assignment, workdir) if sub.folder is not None}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def read_ledgers(folder: Optional[Path]) -> Dict[str, dict]:
    """``{student: ledger entries}`` from ``folder/<student>.json`` (a shared ledger export).

    Read as plain JSON (a corrupt file is skipped, never moved: it is evidence)."""
    out: Dict[str, dict] = {}
    if folder is None:
        return out
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"ledgers must be a folder of <student>.json ledger exports, got {str(folder)!r}")
    for file in sorted(folder.glob("*.json")):
        try:
            data = json.loads(file.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict):
            out[file.stem] = {k: v for k, v in data.items() if isinstance(v, dict)}
    return out


def _feedback_link(course_root: Optional[Path], out_dir: Path, student: str, assignment: str) -> Optional[str]:
    if course_root is None:
        return None
    from ..grading.course_settings import CourseSettings

    folder = CourseSettings(course_root).folder("feedback", student, assignment)
    pages = sorted(folder.glob("*.html")) if folder.is_dir() else []
    return os.path.relpath(pages[0], out_dir) if pages else None


def _share(points: float, maximum: float) -> float:
    return points / maximum if maximum else 0.0


def assignment_report(grades: dict, predictions: Dict[str, dict], ledgers: Dict[str, dict],
                      course_root: Optional[Path], out_dir: Path) -> dict:
    """The report of one assignment (see the module docstring for who is counted)."""
    name = grades["assignment"]
    info = catalog.assignment_info(name)
    rows = sorted(grades["students"], key=lambda r: r["student"])
    counted = [r for r in rows if r["status"] not in EXCLUDED_STATES]
    declared = catalog.parts(name)
    order = list(declared) + sorted({p["part"] for r in rows for p in r["parts"]} - set(declared))
    by_student = {r["student"]: {p["part"]: p for p in r["parts"]} for r in rows}
    parts = _part_entries(name, order, counted, by_student)
    locks, versus = [], []
    for lock in catalog.locks(name):
        chosen = {r["student"]: _option(lock, predictions.get(r["student"], {}).get(lock["key"])) for r in counted}
        locks.append(_lock_entry(lock, chosen))
        versus.append(_prediction_vs_outcome(lock, chosen, parts, counted, by_student))
    by_key = {lock["key"]: lock for lock in catalog.locks(name)}
    students = [_student_entry(r, {k: _option(by_key[k], predictions.get(r["student"], {}).get(k))
                                   for k in by_key}, _feedback_link(course_root, out_dir, r["student"], name))
                for r in rows]
    return {**info, "seed": grades.get("seed"), "shard": grades.get("shard"), "students_total": len(rows),
            "counted": len(counted), "excluded": len(rows) - len(counted), "locks": locks, "parts": parts,
            "prediction_vs_outcome": versus, "students": students,
            "ledger": ledger_summary(name, ledgers, {r["student"] for r in rows})}


def _part_entries(name: str, order: List[str], counted: List[dict], by_student: Dict[str, dict]) -> List[dict]:
    """Per graded part (in ``order``) over the ``counted`` students: its item statistics and the classes of
    wrong answers, or, for a part graded by hand, how many wait for a grade."""
    auto_ids = [gid for gid in order
                if any(gid in by_student[r["student"]] for r in counted)
                and all(by_student[r["student"]].get(gid, {}).get("points") is not None for r in counted)]
    totals = [sum(by_student[r["student"]][g]["points"] for g in auto_ids if g in by_student[r["student"]])
              for r in counted]
    parts = []
    for gid in order:
        cells = [by_student[r["student"]].get(gid) for r in counted]
        sample = next((c for c in cells if c), None)
        if sample is None:
            continue
        meta = catalog.part_info(name, gid, sample)
        entry = {"grade_id": gid, "title": meta["title"], "kind": meta["kind"], "act": meta["act"],
                 "act_title": meta["act_title"], "chapter": meta["chapter"], "lock": meta["lock"],
                 "max_points": sample["max_points"]}
        if gid not in auto_ids:
            entry.update(graded_by_hand=True, pending=sum(1 for c in cells if c and c.get("points") is None))
            parts.append(entry)
            continue
        points = [c["points"] if c else 0.0 for c in cells]
        wrong: Dict[str, int] = {}
        for c in cells:
            if c and c["points"] < c["max_points"]:
                for label in dict.fromkeys(catalog.classify_wrong(c)):
                    wrong[label] = wrong.get(label, 0) + 1
        entry.update(graded_by_hand=False, students=len(points), distribution=stats.distribution(points),
                     mean_points=stats.mean(points),
                     share_right=stats.share([p >= entry["max_points"] - 1e-9 for p in points]),
                     discrimination=stats.discrimination(points, totals),
                     item_total=stats.item_total(points, totals),
                     wrong=[{"class": k, "count": v} for k, v in sorted(wrong.items(), key=lambda kv: (-kv[1], kv[0]))])
        parts.append(entry)
    return parts


def _lock_entry(lock: dict, chosen: Dict[str, Optional[str]]) -> dict:
    """One prediction lock: how many students chose each option, locked nothing, or were right."""
    options = [{"option": o, "text": text, "correct": o == lock["correct"],
                "count": sum(1 for v in chosen.values() if v == o)} for o, text in lock["options"].items()]
    locked = sum(1 for v in chosen.values() if v is not None)
    right = sum(1 for v in chosen.values() if v == lock["correct"])
    return {**{k: lock[k] for k in ("key", "act", "act_title", "question", "correct", "explanation")},
            "options": options, "students": len(chosen), "locked": locked, "no_prediction": len(chosen) - locked,
            "not_an_option": sum(1 for v in chosen.values() if v is not None and v not in lock["options"]),
            "right": right, "share_right": right / locked if locked else None}


def _prediction_vs_outcome(lock: dict, chosen: Dict[str, Optional[str]], parts: List[dict], counted: List[dict],
                           by_student: Dict[str, dict]) -> dict:
    """The share of the lock's act's points (its auto-graded parts other than locks) earned by the students
    who predicted right, wrong or nothing, and by each option."""
    act_parts = [p["grade_id"] for p in parts if p["act"] == lock["act"] and not p["lock"] and not p["graded_by_hand"]]
    groups: Dict[str, List[float]] = {"right": [], "wrong": [], "none": []}
    by_option: Dict[str, List[float]] = {}
    for r in counted:
        mine = by_student[r["student"]]
        score = _share(sum(mine[g]["points"] for g in act_parts if g in mine),
                       sum(mine[g]["max_points"] for g in act_parts if g in mine))
        value = chosen[r["student"]]
        group = "none" if value is None else ("right" if value == lock["correct"] else "wrong")
        groups[group].append(score)
        if value is not None:
            by_option.setdefault(str(value), []).append(score)
    summary = {g: {"students": len(v), "mean_share": stats.mean(v)} for g, v in groups.items()}
    difference = (summary["right"]["mean_share"] - summary["wrong"]["mean_share"]
                  if summary["right"]["students"] and summary["wrong"]["students"] else None)
    return {"key": lock["key"], "act": lock["act"], "act_title": lock["act_title"], "parts": act_parts,
            **summary, "difference": difference,
            "by_option": {o: {"students": len(v), "mean_share": stats.mean(v)} for o, v in sorted(by_option.items())}}


def _student_entry(r: dict, locks: Dict[str, Optional[str]], feedback: Optional[str]) -> dict:
    """One student's row (instructor only): scores, lateness, locked options, parts, reason, feedback page."""
    late = r.get("late") or {}
    return {
        "student": r["student"], "status": r["status"], "counted": r["status"] not in EXCLUDED_STATES,
        "score": r["score"], "max_score": r["max_score"], "final_score": late.get("final_score", r["score"]),
        "late_days": late.get("days_charged", 0), "points_deducted": late.get("points_deducted", 0.0),
        "submitted": late.get("submitted"), "variant": r.get("variant"), "locks": locks,
        "parts": {p["part"]: p["points"] for p in r["parts"]}, "reason": r.get("reason", ""),
        "tampered": list(r.get("tampered") or []),  # locked cells the student changed (autograder.grading.tamper)
        "feedback": feedback}


def ledger_summary(assignment: str, ledgers: Dict[str, dict], roster: set) -> dict:
    """Per ledger key of the assignment, over the students of ``roster`` who shared a ledger:
    how many have an entry, mean visible-check attempts, share passed, failure states hit."""
    keys = {p["ledger_key"] for p in catalog.parts(assignment).values() if p["ledger_key"]}
    keys |= {lock["key"] for lock in catalog.locks(assignment)}
    shared = {s: e for s, e in ledgers.items() if s in roster}
    entries = []
    for key in sorted(keys):
        found = [e[key] for e in shared.values() if key in e]
        if not found:
            continue
        attempts = [e["attempts"] for e in found if type(e.get("attempts")) is int]
        failures: Dict[str, int] = {}
        for e in found:
            for f in e.get("failures_hit", []) if isinstance(e.get("failures_hit"), list) else []:
                failures[str(f)] = failures.get(str(f), 0) + 1
        entries.append({"key": key, "students": len(found), "mean_attempts": stats.mean(attempts),
                        "share_passed": stats.share([e.get("passed") is True for e in found]) if attempts else None,
                        "predictions": sum(1 for e in found if "prediction" in e),
                        "failures_hit": dict(sorted(failures.items()))})
    return {"students": len(shared), "entries": entries}


def term_view(reports: List[dict]) -> dict:
    """Across assignments, hardest first: acts, chapters and exercise kinds by mean share of
    the points their auto-graded parts give (lock completion points left out)."""
    acts: Dict[tuple, dict] = {}
    chapters: Dict[str, dict] = {}
    kinds: Dict[str, dict] = {}
    for rep in reports:
        graded = {p["grade_id"]: p for p in rep["parts"] if not p["graded_by_hand"] and not p["lock"]}
        for s in rep["students"]:
            if not s["counted"]:
                continue
            per_act: Dict[str, List[float]] = {}
            for gid, p in graded.items():
                if gid not in s["parts"]:
                    continue
                per_act.setdefault(p["act"], []).append(gid)
                kind = kinds.setdefault(p["kind"], {"kind": p["kind"], "shares": [], "parts": set()})
                kind["shares"].append(_share(s["parts"][gid], p["max_points"]))
                kind["parts"].add((rep["assignment"], gid))
            for act, gids in per_act.items():
                share = _share(sum(s["parts"][g] for g in gids), sum(graded[g]["max_points"] for g in gids))
                row = acts.setdefault((rep["assignment"], act), {
                    "assignment": rep["assignment"], "act": act, "title": graded[gids[0]]["act_title"],
                    "shares": [], "parts": set()})
                row["shares"].append(share)
                row["parts"].update(gids)
            if per_act:
                total = sum(graded[g]["max_points"] for gids in per_act.values() for g in gids)
                got = sum(s["parts"][g] for gids in per_act.values() for g in gids)
                ch = chapters.setdefault(rep["chapter"], {"chapter": rep["chapter"], "title": rep["title"],
                                                          "shares": [], "parts": set()})
                ch["shares"].append(_share(got, total))
                ch["parts"].update((rep["assignment"], g) for gids in per_act.values() for g in gids)

    def rows(table):
        out = []
        for row in table.values():
            shares = row.pop("shares")
            out.append({**row, "parts": len(row["parts"]), "observations": len(shares), "mean_share": stats.mean(shares)})
        return sorted(out, key=lambda r: (r["mean_share"], str(r.get("act") or r.get("chapter") or r.get("kind"))))

    return {"acts": rows(acts), "chapters": rows(chapters), "kinds": rows(kinds)}


def build_report(grades: Dict[str, dict], *, course_root=None, submissions=None, ledgers=None,
                 out_dir=".") -> dict:
    """The whole report: one section per assignment (in the order given) and the term view."""
    course_root = Path(course_root).resolve() if course_root is not None else None
    if submissions:
        folder = Path(submissions)
    else:  # the course's own submitted folder, as its nbgrader_config.py names it
        from ..grading.course_settings import CourseSettings

        folder = CourseSettings(course_root).step_root("submitted") if course_root else None
    shared = read_ledgers(Path(ledgers)) if ledgers else {}
    out_dir = Path(out_dir).resolve()
    reports = [assignment_report(g, read_submitted_predictions(folder, name), shared, course_root, out_dir)
               for name, g in grades.items()]
    return {"generated": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "anonymised": False, "course_root": str(course_root) if course_root else None,
            "ledgers_shared": len(shared), "assignments": reports, "term": term_view(reports),
            "method": {"discrimination": stats.__doc__.strip().split("\n\n")[1].replace("\n", " "),
                       "counted": "students whose submission the grader ran or read (status none of "
                                  "missing, unreadable and error)"}}
