"""``report.html``: the class report as one self-contained, accessible page.

No script and no external resource (no CDN, no font): one inline style sheet whose colours
follow the reader's light or dark setting (``prefers-color-scheme``). Every table has a
caption and header cells with ``scope``; bars are decoration (``aria-hidden``) beside the
numbers they draw, so a screen reader reads the numbers. Text is a text colour on a
background colour in both schemes; tones only colour bars and borders.
"""

from __future__ import annotations

import html
from typing import Iterable, Optional

CSS = """
:root { color-scheme: light dark;
  --bg: #ffffff; --panel: #f4f5f7; --text: #1b1f24; --muted: #4a5360; --border: #c9ced6;
  --brand: #1f6feb; --good: #1a7f37; --bad: #cf222e; --warn: #9a6700; --link: #0b57d0; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #111418; --panel: #1c2128; --text: #e6edf3; --muted: #aab4c0; --border: #3d4550;
    --brand: #58a6ff; --good: #3fb950; --bad: #ff7b72; --warn: #d29922; --link: #8ab4f8; } }
body { background: var(--bg); color: var(--text); font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif;
  margin: 0 auto; max-width: 1180px; padding: 16px 24px 48px; }
h1 { font-size: 1.6rem; margin: 8px 0 4px; } h2 { font-size: 1.3rem; margin-top: 36px;
  border-bottom: 2px solid var(--border); padding-bottom: 4px; } h3 { font-size: 1.08rem; margin-top: 26px; }
p, li { max-width: 78ch; } .muted { color: var(--muted); } a { color: var(--link); }
table { border-collapse: collapse; margin: 8px 0 16px; width: 100%; background: var(--bg); }
caption { text-align: left; font-weight: 600; padding: 4px 0; color: var(--text); }
th, td { border: 1px solid var(--border); padding: 4px 8px; vertical-align: top; text-align: left; }
thead th, tbody th { background: var(--panel); }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; } td.num { white-space: nowrap; }
.bar { display: inline-block; height: 0.8em; background: var(--brand); vertical-align: middle; margin-right: 6px;
  border-radius: 2px; min-width: 1px; } .bar.good { background: var(--good); } .bar.bad { background: var(--bad); }
.flag { border-left: 4px solid var(--warn); padding-left: 6px; } .right { font-weight: 700; }
.note { background: var(--panel); border-left: 4px solid var(--brand); padding: 8px 12px; margin: 10px 0; }
.explanation { background: var(--panel); padding: 6px 10px; margin: 0 0 8px; border-left: 4px solid var(--good); }
nav ul { columns: 2; } code { font-size: 0.92em; }
.scroll { overflow-x: auto; max-width: 100%; } .scroll:focus { outline: 2px solid var(--brand); }
/* the classified wrong answers: a column wide enough for "3 × a factor of 1000 off" on one line (at 1,200 px
   the auto layout squeezed it to a few words a line); one class a line, a long one wraps under its text */
td.wrong, th.wrong { min-width: 24ch; } .wrong-item { padding-left: 1.2em; text-indent: -1.2em; }
"""


def _e(value) -> str:
    return html.escape("" if value is None else str(value))


def _pct(value: Optional[float]) -> str:
    return "n/a" if value is None else f"{100 * value:.0f} %"


def counted(n: int, noun: str, plural: str = "") -> str:
    """``n`` and ``noun`` in the number ``n`` asks for: "1 part", "2 parts", "0 students".

    >>> counted(1, "part"), counted(3, "part"), counted(1, "pt", "pts"), counted(2, "pt", "pts")
    ('1 part', '3 parts', '1 pt', '2 pts')
    """
    return f"{n:g} {noun if n == 1 else plural or noun + 's'}"


def _r(value: Optional[float]) -> str:
    return "n/a" if value is None else f"{value:+.2f}"


def _bar(fraction: Optional[float], tone: str = "") -> str:
    width = 0 if fraction is None else max(0.0, min(1.0, fraction)) * 120
    return f'<span class="bar {tone}" style="width:{width:.0f}px" aria-hidden="true"></span>'


def _table(caption: str, headers: Iterable[str], rows: Iterable[Iterable[str]], numeric=(), classes=None) -> str:
    """``numeric``: indices of right-aligned number columns; ``classes``: index -> CSS class of a column."""
    classes = {**{i: "num" for i in numeric}, **(classes or {})}
    attr = lambda i: f' class="{classes[i]}"' if i in classes else ""  # noqa: E731 -- a one-line helper local to this function
    head = "".join(f'<th scope="col"{attr(i)}>{_e(h)}</th>' for i, h in enumerate(headers))
    body = []
    for row in rows:
        cells = []
        for i, cell in enumerate(row):
            if i == 0:
                cells.append(f'<th scope="row">{cell}</th>')
            else:
                cells.append(f'<td{attr(i)}>{cell}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    if not body:
        return f"<p class='muted'>{_e(caption)}: nothing to show.</p>"
    # a wide table scrolls inside its own region (keyboard-reachable) instead of the page
    return (f"<div class='scroll' role='region' tabindex='0' aria-label='{_e(caption)}'><table><caption>"
            f"{_e(caption)}</caption><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>")


def _locks(rep: dict) -> str:
    if not rep["locks"]:
        return "<p class='muted'>This assignment has no prediction locks.</p>"
    out = []
    for lock in rep["locks"]:
        locked = lock["locked"] or 1
        rows = [[_e(o["option"]) + (" (correct)" if o["correct"] else ""), _e(o["text"]), str(o["count"]),
                 _bar(o["count"] / locked, "good" if o["correct"] else "") + _pct(o["count"] / locked if lock["locked"] else None)]
                for o in lock["options"]]
        out.append(f"<h4>{_e(lock['act_title'])} <span class='muted'>({_e(lock['key'])})</span></h4>"
                   f"<p>{_e(lock['question'])}</p>"
                   + _table(f"What the class predicted at {lock['key']}: {lock['right']} of {lock['locked']} locked "
                            f"predictions right ({_pct(lock['share_right'])}); {lock['no_prediction']} without a "
                            f"prediction" + (f", {lock['not_an_option']} not an option" if lock["not_an_option"] else ""),
                            ["option", "text", "students", "share of locked"], rows, numeric=(2, 3))
                   + f"<p class='explanation'><b>Explanation shown at the reveal:</b> {_e(lock['explanation'])}</p>")
    return "".join(out)


def _parts(rep: dict) -> str:
    rows = []
    for p in rep["parts"]:
        if p["graded_by_hand"]:
            rows.append([_e(p["grade_id"]), _e(p["title"]), _e(p["kind"]), f"{p['max_points']:g}",
                         "graded by hand", "", "", f"{p['pending']} awaiting a grade", ""])
            continue
        low = p["discrimination"] is not None and p["discrimination"] < 0.2
        dist = ", ".join(f"{counted(float(k), 'pt', 'pts')}: {v}" for k, v in p["distribution"].items())
        wrong = "".join(f"<div class='wrong-item'>{w['count']} × {_e(w['class'])}</div>" for w in p["wrong"]) or "none"
        rows.append([_e(p["grade_id"]), _e(p["title"]), _e(p["kind"]), f"{p['max_points']:g}",
                     _bar(p["share_right"], "good") + _pct(p["share_right"]),
                     (f"<span class='flag'>{_r(p['discrimination'])}</span>" if low else _r(p["discrimination"])),
                     _r(p["item_total"]), _e(dist), wrong])
    return _table(f"Graded parts of {rep['assignment']} over {counted(rep['counted'], 'student')} "
                  f"(discrimination below +0.20 is marked)",
                  ["part", "title", "kind", "max", "share right", "discrimination (part vs rest)",
                   "item-total r", "points distribution", "classified wrong answers"], rows, numeric=(3, 4, 5, 6),
                  classes={8: "wrong"})


def _versus(rep: dict) -> str:
    rows = []
    for v in rep["prediction_vs_outcome"]:
        def cell(group):
            g = v[group]
            return f"{_pct(g['mean_share'])} (n = {g['students']})"
        rows.append([_e(v["key"]), _e(", ".join(v["parts"]) or "none"), cell("right"), cell("wrong"), cell("none"),
                     _e("n/a" if v["difference"] is None else f"{100 * v['difference']:+.0f} percentage points")])
    return _table("Prediction versus outcome: mean share of the act's graded points, by how the student predicted",
                  ["lock", "act's graded parts", "predicted right", "predicted wrong", "no prediction",
                   "right minus wrong"], rows, numeric=(2, 3, 4, 5))


def _students(rep: dict, anonymised: bool) -> str:
    locks = [lock["key"] for lock in rep["locks"]]
    parts = [p["grade_id"] for p in rep["parts"]]
    rows = []
    for s in rep["students"]:
        name = _e(s["student"])
        if s.get("feedback"):
            name = f'<a href="{_e(s["feedback"])}">{name}</a>'
        rows.append([name, _e(s["status"]), f"{s['score']:g} / {s['max_score']:g}", f"{s['final_score']:g}",
                     str(s["late_days"]), *(_e(s["locks"].get(k) or "–") for k in locks),
                     *("hand" if s["parts"].get(g) is None else f"{s['parts'][g]:g}" for g in parts)])
    who = ("pseudonymised students (salted hashes)" if anonymised
           else "students (instructor only; a name links to the student's feedback)")
    return _table(f"Per student of {rep['assignment']}: {who}",
                  ["student", "status", "points", "after late policy", "late days", *locks, *parts], rows,
                  numeric=tuple(range(2, 5 + len(locks) + len(parts))))


def _ledger(rep: dict) -> str:
    led = rep["ledger"]
    if not led["entries"]:
        return ""
    rows = [[_e(e["key"]), str(e["students"]), "n/a" if e["mean_attempts"] is None else f"{e['mean_attempts']:.1f}",
             _pct(e["share_passed"]), str(e["predictions"]),
             _e(", ".join(f"{k} ({v})" for k, v in e["failures_hit"].items()) or "none")] for e in led["entries"]]
    return _table(f"From the design ledgers {counted(led['students'], 'student')} shared",
                  ["ledger key", "students", "visible-check attempts (mean)", "passed a visible check",
                   "predictions recorded", "failure states hit (students)"], rows, numeric=(1, 2, 3, 4))


def _term(term: dict) -> str:
    acts = [[_e(f"{a['assignment']} · {a['act']}"), _e(a["title"]), str(a["parts"]), str(a["observations"]),
             _bar(a["mean_share"], "bad" if (a["mean_share"] or 0) < 0.5 else "") + _pct(a["mean_share"])]
            for a in term["acts"]]
    chapters = [[_e(c["chapter"]), _e(c["title"]), str(c["parts"]), str(c["observations"]),
                 _bar(c["mean_share"]) + _pct(c["mean_share"])] for c in term["chapters"]]
    kinds = [[_e(k["kind"]), str(k["parts"]), str(k["observations"]), _bar(k["mean_share"]) + _pct(k["mean_share"])]
             for k in term["kinds"]]
    return (_table("Hardest acts and exercises first (mean share of their graded points)",
                   ["act", "title", "parts", "students", "mean share"], acts, numeric=(2, 3, 4))
            + _table("Chapters and labs, hardest first", ["chapter", "title", "parts", "students", "mean share"],
                     chapters, numeric=(2, 3, 4))
            + _table("Exercise kinds, hardest first", ["kind", "parts", "part × student", "mean share"], kinds,
                     numeric=(1, 2, 3)))


def render(report: dict) -> str:
    """The report as one HTML page."""
    anonymised = report.get("anonymised", False)
    names = ", ".join(r["assignment"] for r in report["assignments"])
    sections = []
    for rep in report["assignments"]:
        anchor = _e(rep["assignment"])
        excluded = f", {rep['excluded']} without a gradable submission" if rep["excluded"] else ""
        sections.append(
            f"<section aria-labelledby='{anchor}'><h2 id='{anchor}'>{_e(rep['title'])} "
            f"<span class='muted'>({anchor})</span></h2>"
            f"<p>{counted(rep['students_total'], 'student')}; {rep['counted']} counted in the statistics"
            f"{excluded}"
            f". Graded run: seed {_e(rep['seed'])}, shard {_e(rep['shard'])}.</p>"
            f"<h3>What the class predicted</h3>{_locks(rep)}"
            f"<h3>Graded parts</h3>{_parts(rep)}"
            + (f"<h3>Prediction versus outcome</h3>{_versus(rep)}" if rep["prediction_vs_outcome"] else "")
            + (f"<h3>Design ledgers</h3>{_ledger(rep)}" if rep["ledger"]["entries"] else "")
            + f"<h3>Per student</h3>{_students(rep, anonymised)}</section>")
    nav = "".join(f"<li><a href='#{_e(r['assignment'])}'>{_e(r['title'])}</a></li>" for r in report["assignments"])
    banner = ("<p class='note'>Anonymised export for teaching research: student ids are salted hashes; feedback "
              "links, submission times, reasons and variants are left out.</p>" if anonymised else
              "<p class='note'>Instructor only: the per-student tables name students. Keys never appear in "
              "this report; wrong answers are shown as the classes the feedback hints use.</p>")
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>Class report: {_e(names)}</title><style>{CSS}</style></head><body><main>"
            f"<h1>Class report</h1><p class='muted'>{_e(names)} · generated {_e(report['generated'])}</p>{banner}"
            f"<nav aria-label='Assignments'><ul>{nav}<li><a href='#term'>Across assignments</a></li></ul></nav>"
            f"{''.join(sections)}"
            f"<section aria-labelledby='term'><h2 id='term'>Across assignments</h2>{_term(report['term'])}</section>"
            f"<h2>How this is computed</h2><p>{_e(report['method']['discrimination'])}</p>"
            f"<p>Counted: {_e(report['method']['counted'])}.</p></main></body></html>\n")
