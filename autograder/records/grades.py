"""grades.json / grades.csv, merging shards, and the terminal summary table."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Iterable, List

CSV_COLUMNS = ["student", "assignment", "part", "exercise", "kind", "points", "max_points",
               "status", "reason", "submission_status", "submission_reason"]


def csv_rows(results: Iterable[dict]) -> List[dict]:
    """One row per student and part (a student without parts still gets one row)."""
    rows = []
    for res in results:
        common = {"student": res["student"], "assignment": res["assignment"],
                  "submission_status": res["status"], "submission_reason": res["reason"]}
        for part in res["parts"] or [{}]:
            rows.append({**common, **{k: part.get(k, "") for k in
                                      ("part", "exercise", "kind", "points", "max_points", "status",
                                       "reason")}})
    return rows


def write(results: List[dict], out_dir, meta: dict) -> None:
    """Write ``grades.json`` and ``grades.csv`` into ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    results = sorted(results, key=lambda r: r["student"])
    (out / "grades.json").write_text(json.dumps({**meta, "students": results}, indent=1) + "\n")
    with open(out / "grades.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        for row in csv_rows(results):
            writer.writerow({k: ("" if row[k] is None else row[k]) for k in CSV_COLUMNS})


def shards_assignment(shard_files: Iterable) -> str:
    """The assignment the first shard's ``grades.json`` grades (``merge``'s default folder)."""
    for path in shard_files:
        path = Path(path)
        return json.loads((path / "grades.json" if path.is_dir() else path).read_text())["assignment"]
    raise ValueError("shard_files must name at least one grades.json")


def merge(shard_files: Iterable, out_dir) -> dict:
    """Combine shards' ``grades.json`` into one; a student graded twice is an error."""
    merged, meta = {}, None
    for path in shard_files:
        path = Path(path)
        data = json.loads((path / "grades.json" if path.is_dir() else path).read_text())
        this = {k: v for k, v in data.items() if k not in ("students", "shard")}
        if meta is None:
            meta = this
        elif this.get("assignment") != meta.get("assignment"):
            raise ValueError(f"shard {path} grades {this.get('assignment')!r}, "
                             f"not {meta.get('assignment')!r}")
        for res in data["students"]:
            if res["student"] in merged:
                raise ValueError(f"student {res['student']!r} appears in more than one shard")
            merged[res["student"]] = res
    if meta is None:
        raise ValueError("shard_files must name at least one grades.json")
    write(list(merged.values()), out_dir, {**meta, "shard": "merged"})
    return {**meta, "students": [merged[k] for k in sorted(merged)]}


def summary_table(results: List[dict]) -> str:
    """A plain-text table: one line per part, then the total (for single-submission mode)."""
    lines = []
    for res in results:
        lines.append(f"{res['student']} / {res['assignment']}: {res['status']} "
                     f"- {res['score']:g} of {res['max_score']:g} points")
        if res["reason"] != "graded":
            lines.append(f"  note: {res['reason']}")
        width = max([len(p["part"]) for p in res["parts"]] + [4])
        lines.append(f"  {'part':<{width}}  {'points':>9}  status      reason")
        for p in res["parts"]:
            pts = "hand" if p["points"] is None else f"{p['points']:g}/{p['max_points']:g}"
            lines.append(f"  {p['part']:<{width}}  {pts:>9}  {p['status']:<10}  {p['reason']}")
    return "\n".join(lines)


def summary_line(row: dict, isolation: str, seed: int) -> str:
    """One line an instructor reads per graded submission: points, isolation, seed, time, and
    what needs a person (hand grading, a problem with the submission)."""
    waiting = [p["part"] for p in row["parts"] if p["status"] == "manual"]
    line = (f"{row['student']} {row['assignment']}: {float(row['score'])} of {float(row['max_score'])} points "
            f"({isolation}, probe seed {seed}, {row.get('seconds', 0):.1f} s)")
    late = row.get("late") or {}
    if late.get("days_charged"):
        line += f"; late {late['days_charged']} day(s): final {late['final_score']:g}"
    if late.get("extension"):
        line += f"; {late['extension']}"
    if waiting:
        line += f"; to grade by hand: {', '.join(waiting)}"
    if row["status"] != "graded" or row["reason"] != "graded":
        line += f"; NOTE: {row['reason']}"
    return line


def write_log(results: List[dict], path, isolation: str, seed: int) -> Path:
    """The grading run's details for the instructor: each submission's summary line, then its parts
    (points, status, the judge's reason; never a hidden test's source or inputs)."""
    path = Path(path)
    lines = []
    for res in sorted(results, key=lambda r: r["student"]):
        lines.append(summary_line(res, isolation, seed))
        for part in res["parts"]:
            if part["points"] is None:
                lines.append(f"    {part['part']}: -/{part['max_points']:g} waits for grading by hand")
            else:
                lines.append(f"    {part['part']}: {part['points']:g}/{part['max_points']:g} {part['status']}: "
                             f"{part['reason']}")
    path.write_text("\n".join(lines) + "\n")
    return path
