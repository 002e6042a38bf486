"""The class report on a class graded by the real grader, against counts worked out by hand.

22 students submit Lab 06 (honest, with a factor-2 or unit slip, a wrong algorithm, copied from
a classmate, untouched, missing, late), each locking predictions with the lab's own lock widget
(``LabSession(...).lock(act).answer(option)`` writes their ``predictions.json``); the lab is
graded in two CI shards and merged. Six of them also submit workbook chapter 2. The expected
numbers below come from what each student was made to do (``ROLES``, ``PREDICTED``), not from
the report: Pearson's r is computed here with :func:`statistics.correlation`.
"""

from __future__ import annotations

import copy
import json
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from .course_dir import CHAPTER, grade_id, make_course, release, solution, submit, with_wrong_first_answer

pytestmark = pytest.mark.slow

LAB = "lab06_bandwidth_invariant"
STUDENTS = [f"s{i:02d}" for i in range(22)]
#: what each student's notebook does (anything not named here is an honest submission)
ROLES = {"s10": "ratio_x2", "s11": "ratio_x2", "s12": "ratio_x2", "s13": "ratio_x1000",
         "s14": "tree", "s15": "tree", "s16": "copied", "s17": "copied", "s18": "copied",
         "s19": "untouched", "s20": "missing", "s21": "late"}
#: (Act I lock, Act II lock) each student locked; None: no prediction. Correct: C and C.
PREDICTED = {"s00": ("C", "C"), "s01": ("C", "C"), "s02": ("C", "B"), "s03": ("C", "C"), "s04": ("C", "A"),
             "s05": ("C", "C"), "s06": ("B", "C"), "s07": ("B", "B"), "s08": ("A", "C"), "s09": ("C", None),
             "s10": ("B", "B"), "s11": ("B", "C"), "s12": ("D", "B"), "s13": ("B", "B"), "s14": ("C", "B"),
             "s15": ("A", "B"), "s16": ("B", "C"), "s17": ("C", "D"), "s18": ("B", "B"), "s19": (None, None),
             "s20": (None, None), "s21": ("C", "C")}
#: whose predictions.json holds letters, as written before options had ids (the report reads them as options)
LEGACY_STUDENT = "s12"
#: students who share their design ledger with the instructor
SHARED_LEDGERS = ["s00", "s06", "s10", "s14", "s19"]
CH02_STUDENTS = ["s00", "s01", "s02", "s03", "s04", "s05"]
SALT = "research-salt-0123456789abcdef"
DUE = "2026-11-21 00:00:00 UTC"


def _cli(*args, cwd=None):
    proc = subprocess.run([sys.executable, "-m", "autograder", *args], capture_output=True, text=True,
                          timeout=1500, cwd=cwd)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return proc


def _edit(nb, answer_id: str, extra: str):
    nb = copy.deepcopy(nb)
    cell = next(c for c in nb.cells if grade_id(c) == answer_id)
    cell.source += "\n" + extra
    return nb


def _act1_gpus(student: str) -> int:
    from course.assess.variants import variant_of
    from course.labs import lab06

    return lab06.LAB.spec_for(variant_of(LAB, student))["act1_gpus"]


def _copy_sources():
    """For each copier, an honest classmate whose Act I cluster is 1.2-1.8x larger or smaller: the
    naive/ring ratio is about N (the lab's Act I), so the copied answer is wrong by no unit slip
    and within a factor of 3 (the hint "check the formula and the numbers you used")."""
    out = {}
    for student in [s for s, r in ROLES.items() if r == "copied"]:
        mine = _act1_gpus(student)
        out[student] = next((src for src in STUDENTS[:10]
                             if 1.2 <= max(_act1_gpus(src), mine) / min(_act1_gpus(src), mine) <= 1.8), None)
    return out


def _visible_checks(student: str, ledger: Path, attempts) -> None:
    """Run exercise 2.1's visible check as ``student`` would, recording in ``ledger`` (the package writes it)."""
    import os

    from course.notebook_api import check
    from tests.assignments.nbgrader_course import honest_answers

    right: dict = {}
    exec(honest_answers(CHAPTER, student)["ch02_ex2_1_answer"], right)
    saved = {k: os.environ.pop(k, None) for k in ("COURSE_STUDENT", "COURSE_LEDGER", "JUPYTERHUB_USER")}
    os.environ.update(COURSE_STUDENT=student, COURSE_LEDGER=str(ledger))
    try:
        for attempt in attempts:
            # an attempt is a new answer (issue 36): each kind of answer is its own value
            factor = {"right": 1, "wrong": 8, "other wrong": 4}[attempt]
            check("2.1", {"accum_steps": right["accum_steps"] * factor})
    finally:
        for key, value in saved.items():
            os.environ.pop(key, None)
            if value is not None:
                os.environ[key] = value


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    from course.notebook_api.lab_session import LabSession
    from course.ledger import Ledger

    base = tmp_path_factory.mktemp("classreport")
    root = make_course(base / "course", LAB)
    make_course(root, CHAPTER)
    ledgers, shared = base / "ledgers", base / "shared"
    shared.mkdir()
    sources = _copy_sources()
    for student in STUDENTS:
        role = ROLES.get(student, "honest")
        folder = root / "submitted" / student / LAB
        if role == "missing":
            submit(root, student, assignment=LAB)
        else:
            nb = solution(root, LAB, student=student)
            if role == "ratio_x2":
                nb = _edit(nb, "lab06_act1_ratio_answer", "naive_over_ring *= 2")
            elif role == "ratio_x1000":
                nb = _edit(nb, "lab06_act1_ratio_answer", "naive_over_ring *= 1000  # ms, not s")
            elif role == "tree":
                nb = _edit(nb, "lab06_act2_small_answer", "small_update_us = dashboard.result['best_seconds'] * 1e3  # ms")
            elif role == "copied":
                nb = solution(root, LAB, student=sources[student] or "s00")
            elif role == "untouched":
                nb = release(root, LAB)
            submit(root, student, nb, assignment=LAB)
        stamp = "2026-11-22 12:00:00.000000 UTC" if role == "late" else "2026-11-20 10:00:00.000000 UTC"
        (folder / "timestamp.txt").write_text(stamp)
        session = LabSession("lab06", folder=folder, ledger=Ledger(ledgers / f"{student}.json"))
        if student == LEGACY_STUDENT:  # a predictions.json written before option ids: it stored the letters
            (folder / "predictions.json").write_text(json.dumps(
                {f"lab06/{act}": {"value": option, "kind": "choice", "locked": True, "locked_at": "2026-11-19T10:00:00+00:00"}
                 for act, option in zip(("act1", "act2"), PREDICTED[student])}))
            continue
        for act, option in zip(("act1", "act2"), PREDICTED[student]):
            if option is not None:
                session.lock(act).answer(option)  # a letter of the declaration: the lock stores its option's id
        if student in SHARED_LEDGERS and (ledgers / f"{student}.json").exists():
            shutil.copy(ledgers / f"{student}.json", shared / f"{student}.json")
    for student in CH02_STUDENTS:
        nb = solution(root, student=student)
        if student == "s03":
            nb = with_wrong_first_answer(nb)
        elif student == "s04":
            nb = release(root)
        elif student == "s05":
            cell = next(c for c in nb.cells if grade_id(c) == "ch02_ex2_4_answer")
            cell.source = ("def effective_batch(micro_batch, accum_steps, dp):\n"
                           "    return micro_batch * accum_steps * dp\n")
        submit(root, student, nb)
    # visible checks of exercise 2.1 in two shared ledgers: s00 twice wrong then right, s06 once wrong
    _visible_checks("s00", shared / "s00.json", ["wrong", "other wrong", "right"])
    _visible_checks("s06", shared / "s06.json", ["wrong"])
    common = ["--course-root", str(root), "--workers", "2", "--seed", "11", "--no-progress"]
    for k in (1, 2):
        _cli("class", LAB, *common, "--shard", f"{k}/2", "--out", str(root / f"shard{k}"),
             "--due", DUE, "--late-per-day", "0.1")
    _cli("merge", str(root / "shard1"), str(root / "shard2"), "--out", str(root / "lab06"))
    _cli("class", CHAPTER, *common, "--out", str(root / "ch02"), "--no-feedback")
    # as on the hub: in the instructor's course root, the defaults find the merged grades.json
    _cli("report", LAB, CHAPTER, "--ledgers", str(shared), "--out", "report", cwd=root)
    _cli("report", LAB, CHAPTER, "--anonymise", "--salt", SALT, "--out", str(base / "research"),
         "--course-root", str(root))
    report = json.loads((root / "report" / "report.json").read_text())
    return {"root": root, "base": base, "report": report, "sources": sources,
            "lab": report["assignments"][0], "ch02": report["assignments"][1],
            "grades": {r["student"]: r for r in json.loads((root / "lab06" / "grades.json").read_text())["students"]}}


# --- what each student should have earned, by hand -----------------------------------------

def _counted():
    return [s for s in STUDENTS if ROLES.get(s) != "missing"]


def _expected_points(student: str) -> dict:
    role = ROLES.get(student, "honest")
    act1, act2 = PREDICTED[student]
    return {"lab06_act1_lock": 1.0 if act1 else 0.0,
            "lab06_act1_ratio": 1.0 if role in ("honest", "late", "tree") else 0.0,
            "lab06_act2_lock": 1.0 if act2 else 0.0,
            "lab06_act2_small": 0.0 if role in ("tree", "untouched") or (role == "copied" and not _same_update(student))
                                else 1.0}


def _same_update(student: str) -> bool:
    """Whether a copier's source had the copier's own Act II time (within its 2 %): the update, GPU count and
    link vary per student, so a copied time is almost always another student's."""
    from course.assess.variants import variant_of
    from course.labs import lab06

    source = _copy_sources()[student] or "s00"
    mine, theirs = (lab06.act2_fastest_us(lab06.LAB.spec_for(variant_of(LAB, s))) for s in (student, source))
    return abs(mine - theirs) <= 0.02 * mine


def test_the_grader_gave_what_each_role_deserves(graded):
    assert all(graded["sources"].values()), "no classmate with a 1.2-1.8x cluster to copy from"
    for student in _counted():
        expected = _expected_points(student)
        got = {p["part"]: p["points"] for p in graded["grades"][student]["parts"] if p["part"] in expected}
        assert got == expected, student
        hand = [p["points"] for p in graded["grades"][student]["parts"] if p["part"].endswith("_why")]
        # nbgrader scores an untouched written answer 0 itself; the others wait for the instructor
        assert hand == ([0.0, 0.0] if ROLES.get(student) == "untouched" else [None, None]), student
    assert graded["grades"]["s20"]["status"] == "missing"


def _ids(key):
    """``{letter of the declaration: option id}`` of a lab06 lock (PREDICTED is written in letters)."""
    from course.notebook_api.lab_session import labs

    return labs()["lab06"].lock_of(key.split("/")[1]).letters


def test_lock_counts_match_the_predictions_made(graded):
    locks = {lock["key"]: lock for lock in graded["lab"]["locks"]}
    assert list(locks) == ["lab06/act1", "lab06/act2"]
    for index, key in enumerate(locks):
        ids = _ids(key)
        made = [ids.get(PREDICTED[s][index]) for s in _counted()]
        lock = locks[key]
        # counted by option id (content), the legacy student's letters included
        # every declared option, also one this class was never shown (Act I's scale of five, shown as four)
        assert {o["option"]: o["count"] for o in lock["options"]} == {ids[o]: made.count(ids[o]) for o in ids}
        assert lock["right"] == made.count(ids["C"]) and lock["correct"] == ids["C"]
        assert lock["no_prediction"] == made.count(None)
        assert lock["share_right"] == pytest.approx(made.count(ids["C"]) / (len(made) - made.count(None)))
        assert "ring" in lock["explanation"] or "log" in lock["explanation"]
    # by hand from the table: Act I, 10 of 20 locked predictions right (s19 locked none; s20 is not counted)
    assert locks["lab06/act1"]["right"] == 10 and locks["lab06/act1"]["locked"] == 20


def test_part_counts_share_and_discrimination_match_a_hand_computation(graded):
    counted = _counted()
    points = {s: _expected_points(s) for s in counted}
    totals = {s: sum(points[s].values()) for s in counted}
    parts = {p["grade_id"]: p for p in graded["lab"]["parts"]}
    assert graded["lab"]["counted"] == 21 and graded["lab"]["excluded"] == 1
    for gid in ("lab06_act1_lock", "lab06_act1_ratio", "lab06_act2_lock", "lab06_act2_small"):
        mine = [points[s][gid] for s in counted]
        rest = [totals[s] - points[s][gid] for s in counted]
        assert parts[gid]["distribution"] == {k: v for k, v in
                                              (("0", mine.count(0.0)), ("1", mine.count(1.0))) if v}
        assert parts[gid]["share_right"] == pytest.approx(mine.count(1.0) / len(mine))
        assert parts[gid]["discrimination"] == pytest.approx(statistics.correlation(mine, rest))
        assert parts[gid]["item_total"] == pytest.approx(
            statistics.correlation(mine, [totals[s] for s in counted]))
    # Act I's number: 13 of 21 right (3 slips of 2, 1 of 1000, 3 copies and 1 untouched are wrong)
    assert parts["lab06_act1_ratio"]["share_right"] == pytest.approx(13 / 21)
    assert parts["lab06_act1_why"]["graded_by_hand"] and parts["lab06_act1_why"]["pending"] == 20


def test_wrong_answers_are_counted_in_the_feedback_hints_classes(graded):
    parts = {p["grade_id"]: p for p in graded["lab"]["parts"]}
    wrong = {w["class"]: w["count"] for w in parts["lab06_act1_ratio"]["wrong"]}
    assert wrong == {"a factor of 2 off": 3, "a factor of 1000 off": 1, "not answered": 1,
                     "check the formula and the numbers you used": 3}
    small = {w["class"]: w["count"] for w in parts["lab06_act2_small"]["wrong"]}
    # two times in ms instead of µs, one untouched; the copiers' times are another update's (in general)
    copied = {w["class"]: w["count"] for w in parts["lab06_act2_small"]["wrong"]
              if w["class"] not in ("a factor of 1000 off", "not answered")}
    assert small.get("a factor of 1000 off") == 2 and small.get("not answered") == 1
    # that one is s19, who handed in the release as it came: the reason says the answer is blank
    untouched = {p["part"]: p["reason"] for p in graded["grades"]["s19"]["parts"]}
    assert untouched["lab06_act2_small"] == "`small_update_us` is not answered: no cell of your notebook assigns it"
    codes = {p["part"]: (p["code"], p["findings"]) for p in graded["grades"]["s19"]["parts"]}
    assert codes["lab06_act2_small"] == ("not_answered", ["not_answered"])  # what the report counts, not the words
    assert sum(copied.values()) == sum(not _same_update(s) for s, r in ROLES.items() if r == "copied")
    ch02 = {p["grade_id"]: p for p in graded["ch02"]["parts"]}
    # s03's step count is 8x the key: a count, so no bits-for-bytes hint, just the magnitude
    assert {w["class"]: w["count"] for w in ch02["ch02_ex2_1"]["wrong"]} == {
        "wrong order of magnitude": 1, "not answered": 1}
    # s05's function raises no ValueError: the invalid-inputs check (1 of 4 shares of 2 points)
    assert ch02["ch02_ex2_4"]["distribution"] == {"0": 1, "1.5": 1, "2": 4}
    # s04 left the release's stub (``pass``): a blank answer, not four failed checks
    assert {w["class"]: w["count"] for w in ch02["ch02_ex2_4"]["wrong"]} == {
        "invalid inputs: does not raise ValueError": 1, "not answered": 1}


def test_prediction_versus_outcome_by_hand(graded):
    versus = {v["key"]: v for v in graded["lab"]["prediction_vs_outcome"]}
    for index, (key, part) in enumerate((("lab06/act1", "lab06_act1_ratio"), ("lab06/act2", "lab06_act2_small"))):
        groups = {"right": [], "wrong": [], "none": []}
        for s in _counted():
            made = PREDICTED[s][index]
            groups["none" if made is None else "right" if made == "C" else "wrong"].append(_expected_points(s)[part])
        v = versus[key]
        assert v["parts"] == [part]
        for group, scores in groups.items():
            assert v[group]["students"] == len(scores)
            assert v[group]["mean_share"] == pytest.approx(statistics.mean(scores))
        assert v["difference"] == pytest.approx(statistics.mean(groups["right"]) - statistics.mean(groups["wrong"]))


def test_per_student_rows_late_days_and_feedback_links(graded):
    rows = {s["student"]: s for s in graded["lab"]["students"]}
    assert list(rows) == STUDENTS
    assert rows["s21"]["late_days"] == 2 and rows["s21"]["final_score"] == pytest.approx(0.8 * rows["s21"]["score"])
    assert all(rows[s]["late_days"] == 0 for s in STUDENTS if s != "s21")
    assert rows["s07"]["locks"] == {"lab06/act1": _ids("lab06/act1")["B"], "lab06/act2": _ids("lab06/act2")["B"]}
    assert rows[LEGACY_STUDENT]["locks"] == {k: _ids(k)[v] for k, v in zip(("lab06/act1", "lab06/act2"),
                                                                           PREDICTED[LEGACY_STUDENT])}
    report_dir = graded["root"] / "report"
    for s in _counted():
        link = rows[s]["feedback"]
        assert link and (report_dir / link).resolve() == next(
            (graded["root"] / "feedback" / s / LAB).glob("*.html")).resolve()
    assert rows["s20"]["feedback"] is None and not rows["s20"]["counted"]
    # the instructor's report names students: readable by its owner only (the research export is for sharing)
    assert {(report_dir / n).stat().st_mode & 0o777 for n in ("report.json", "report.html")} == {0o600}


def test_term_view_ranks_acts_chapters_and_kinds(graded):
    term = graded["report"]["term"]
    acts = {(a["assignment"], a["act"]): a for a in term["acts"]}
    act1 = [_expected_points(s)["lab06_act1_ratio"] for s in _counted()]
    assert acts[(LAB, "act1")]["mean_share"] == pytest.approx(statistics.mean(act1))
    shares = [a["mean_share"] for a in term["acts"]]
    assert shares == sorted(shares)
    assert {c["chapter"] for c in term["chapters"]} == {"lab06", "ch02"}
    assert {"derive", "build", "choice"} <= {k["kind"] for k in term["kinds"]}
    assert "lock" not in {k["kind"] for k in term["kinds"]}


def test_ledgers_the_students_shared(graded):
    ledger = graded["lab"]["ledger"]
    assert ledger["students"] == 4  # s19 locked nothing, so it has no ledger to share
    entries = {e["key"]: e for e in ledger["entries"]}
    assert entries["lab06/act1"]["predictions"] == 4
    visible = {e["key"]: e for e in graded["ch02"]["ledger"]["entries"]}["ch02/ex2_1"]
    assert visible["students"] == 2 and visible["mean_attempts"] == pytest.approx((3 + 1) / 2)
    assert visible["share_passed"] == pytest.approx(1 / 2)


def test_the_page_names_no_key_and_carries_everything_itself(graded):
    import re

    page = (graded["root"] / "report" / "report.html").read_text()
    assert "<script" not in page and "http://" not in page and "https://" not in page
    assert "prefers-color-scheme: dark" in page and page.count("<caption>") >= 6
    # a student's row holds their status, points (at most the part's 1 or 2, the lab's 8), late days and
    # the options they locked (by id, such as "128x": the option "about 128x", not a number of the key);
    # a key (naive/ring is about N >= 8 GPUs, never a whole number of points) never
    option_ids = {o["option"] for lock in graded["lab"]["locks"] for o in lock["options"]}
    for row in re.findall(r'<tr><th scope="row"><a href="[^"]*feedback[^"]*">(s\d\d)</a></th>(.*?)</tr>', page):
        cells = [c for c in re.findall(r"<td[^>]*>(.*?)</td>", row[1]) if c not in option_ids]
        numbers = [float(x) for cell in cells for x in re.findall(r"\d+(?:\.\d+)?", cell)]
        assert max(numbers) <= 8, row
    for s in graded["lab"]["students"]:
        assert set(s) == {"student", "status", "counted", "score", "max_score", "final_score", "late_days",
                          "points_deducted", "submitted", "variant", "locks", "parts", "reason", "feedback",
                          "tampered"}
        assert all(v is None or v <= 2 for v in s["parts"].values())


def test_anonymised_export_keeps_no_identifier(graded):
    from autograder.reports.anonymise import pseudonym

    folder = graded["base"] / "research"
    text = (folder / "report.json").read_text() + (folder / "report.html").read_text()
    data = json.loads((folder / "report.json").read_text())
    assert data["anonymised"] and data["course_root"] is None
    for s in STUDENTS:
        assert f'"{s}"' not in text and f">{s}<" not in text
    assert SALT not in text and str(graded["root"]) not in text and '"variant"' not in text
    lab, ch02 = data["assignments"]
    assert {s["student"] for s in lab["students"]} == {pseudonym(s, SALT) for s in STUDENTS}
    assert {s["student"] for s in ch02["students"]} <= {s["student"] for s in lab["students"]}
    assert [s["student"] for s in lab["students"]] == sorted(s["student"] for s in lab["students"])
    assert lab["locks"] == graded["lab"]["locks"] and lab["parts"] == graded["lab"]["parts"]
    proc = subprocess.run([sys.executable, "-m", "autograder", "report", LAB, "--course-root", str(graded["root"]),
                           "--anonymise", "--salt", "short", "--out", str(graded["base"] / "nope")],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "salt" in proc.stderr


def test_only_shards_is_refused_with_the_command_to_merge(graded, tmp_path):
    for k in (1, 2):
        shutil.copytree(graded["root"] / f"shard{k}", tmp_path / f"shard{k}")
    proc = subprocess.run([sys.executable, "-m", "autograder", "report", LAB, "--course-root", str(tmp_path),
                           "--out", str(tmp_path / "out")], capture_output=True, text=True)
    assert proc.returncode == 2 and "course-autograde merge" in proc.stderr


def test_the_page_reads_in_light_and_dark(graded, browser):
    """Rendered by Chromium in both colour schemes: text contrast of every table cell >= 4.5."""
    page_file = graded["root"] / "report" / "report.html"
    shots = Path("/tmp") / "class-report-screenshots"  # kept after the run, for a person to look at
    shots.mkdir(exist_ok=True)
    shutil.copy(page_file, shots / "report.html")
    shutil.copy(page_file.with_suffix(".json"), shots / "report.json")
    for scheme in ("light", "dark"):
        context = browser.new_context(color_scheme=scheme, viewport={"width": 1280, "height": 900})
        page = context.new_page()
        requests = []
        page.on("request", lambda r: requests.append(r.url))
        page.goto(page_file.as_uri())
        worst = page.evaluate(CONTRAST_JS)
        page.screenshot(path=str(shots / f"report-{scheme}.png"), full_page=False)
        for heading, name in (("Graded parts", "parts"), ("Prediction versus outcome", "versus")):
            page.locator("h3", has_text=heading).first.scroll_into_view_if_needed()
            page.screenshot(path=str(shots / f"report-{scheme}-{name}.png"))
        page.locator("#term").scroll_into_view_if_needed()
        page.screenshot(path=str(shots / f"report-{scheme}-term.png"))
        context.close()
        assert [u for u in requests if not u.startswith("file://")] == []
        assert worst["ratio"] >= 4.5, (scheme, worst)


#: the lowest WCAG contrast ratio of text against its background over the page's text elements
CONTRAST_JS = """() => {
  const lum = (c) => { const m = c.match(/[\\d.]+/g).map(Number);
    const ch = m.slice(0, 3).map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
    return 0.2126 * ch[0] + 0.7152 * ch[1] + 0.0722 * ch[2]; };
  const bg = (el) => { while (el) { const c = getComputedStyle(el).backgroundColor;
    if (c && !c.endsWith(', 0)') && c !== 'transparent') return c; el = el.parentElement; } return 'rgb(255, 255, 255)'; };
  let worst = {ratio: 99, text: ''};
  for (const el of document.querySelectorAll('h1,h2,h3,h4,p,th,td,caption,a,li,span.muted')) {
    if (!el.textContent.trim()) continue;
    const a = lum(getComputedStyle(el).color), b = lum(bg(el));
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    if (ratio < worst.ratio) worst = {ratio, text: el.textContent.slice(0, 60)};
  }
  return worst;
}"""


def test_instructor_notebook_draws_the_figures_headless(graded):
    """notebooks/instructor_report.ipynb, executed in a real kernel on this class's report.json."""
    import os

    from nbclient import NotebookClient

    path = Path(__file__).resolve().parents[2] / "notebooks" / "instructor_report.ipynb"
    nb = nbformat.read(path, as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), "commit without outputs"
    os.environ["COURSE_REPORT"] = str(graded["root"] / "report" / "report.json")
    try:
        NotebookClient(nb, timeout=180, kernel_name="python3",
                       resources={"metadata": {"path": str(graded["base"])}}).execute()
    finally:
        del os.environ["COURSE_REPORT"]
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    views = [o for o in outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert len(views) == 5  # locks, parts, wrong answers, prediction vs outcome, term
    state = nb.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {}).get("state", {})
    figures = [m for m in state.values() if m.get("model_name") == "FigureModel"]
    # 2 locks + 2 x 2 part charts + 5 parts with wrong answers... + 2 versus + 3 term charts
    assert len(figures) >= 2 + 4 + 2 + 3
    bars = [m["state"] for m in state.values() if m.get("model_name") == "BarsModel"]
    assert all(all(c.startswith("var(--jp-") for c in b["colors"]) for b in bars)
