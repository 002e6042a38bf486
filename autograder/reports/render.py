"""``report.html``: the class report as one self-contained, accessible page.

No script and no external resource (no CDN, no font): one inline style sheet whose colours
follow the reader's light or dark setting (``prefers-color-scheme``). Every table has a
caption and header cells with ``scope``; bars are decoration (``aria-hidden``) beside the
numbers they draw, so a screen reader reads the numbers. Text is a text colour on a
background colour in both schemes; tones only colour bars and borders.

The page is the Jinja2 template ``autograder/templates/report/report.html.j2`` with autoescaping on:
everything the report holds (a student id, an option's text, a title) is text on the page, never markup.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Optional

#: the report's template (``report/report.html.j2``) lives with the course's other templates
TEMPLATES = Path(__file__).resolve().parents[1] / "templates" / "report"

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


def _pct(value: Optional[float]) -> str:
    return "n/a" if value is None else f"{100 * value:.0f} %"


def counted(n: int, noun: str, plural: str = "") -> str:
    """``n`` and ``noun`` in the number ``n`` asks for: "1 part", "2 parts", "0 students".

    >>> counted(1, "part"), counted(3, "part"), counted(1, "pt", "pts"), counted(2, "pt", "pts")
    ('1 part', '3 parts', '1 pt', '2 pts')
    """
    return f"{n:g} {noun if n == 1 else plural or noun + 's'}"


def _signed(value: Optional[float]) -> str:
    return "n/a" if value is None else f"{value:+.2f}"


def _bar_width(fraction: Optional[float]) -> str:
    """A bar's width in pixels: 120 for the whole."""
    return f"{0 if fraction is None else max(0.0, min(1.0, fraction)) * 120:.0f}"


@functools.cache
def _template():
    """``templates/report/report.html.j2``, autoescaped: a value is text unless the template makes it markup."""
    from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
    from markupsafe import Markup

    env = Environment(loader=FileSystemLoader(str(TEMPLATES)), autoescape=select_autoescape(["j2"]),
                      undefined=StrictUndefined)
    env.globals.update(pct=_pct, signed=_signed, counted=counted, bar_width=_bar_width, css=Markup(CSS))  # the course's own style sheet
    return env.get_template("report.html.j2")


def _parts(rep: dict) -> str:
    """The graded parts' table of one assignment (the template's ``parts`` macro)."""
    return str(_template().make_module({"report": None}).parts(rep))


def render(report: dict) -> str:
    """The report as one HTML page."""
    page = _template().render(report=report)
    # a second wall behind the escaping: no script, no style but the report's own, its bars' widths
    # included (students' ids, predictions and ledger keys are theirs) -- autograder/grading/sanitize.py
    from ..grading.sanitize import with_content_security_policy

    return with_content_security_policy(page)
