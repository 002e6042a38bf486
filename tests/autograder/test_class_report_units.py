"""The class report's pieces without a grading run: statistics, the hint classes, the salt rule."""

from __future__ import annotations

import statistics

import pytest

from autograder.reports import catalog, stats
from autograder.reports.anonymise import anonymise
from course.notebook_api import judge_json


def test_discrimination_is_the_correlation_with_the_rest():
    part, totals = [1, 1, 0, 0, 1], [5, 3, 1, 2, 4]
    assert stats.discrimination(part, totals) == pytest.approx(
        statistics.correlation(part, [t - p for p, t in zip(part, totals)]))
    assert stats.item_total(part, totals) == pytest.approx(statistics.correlation(part, totals))
    assert stats.discrimination([1, 1, 1], [3, 2, 1]) is None  # nobody told apart


def test_wrong_numbers_fall_in_the_hint_classes_the_judge_words():
    """Verdicts as the real judge makes them for Lab 06 Act I (key about N = 128 for the lab's own numbers):
    each carries a code, and the report classes the row by it."""
    row = lambda verdict: {"points": 0.0, "max_points": 1.0, "reason": verdict.reason, "checks": [],
                           "code": verdict.code, "findings": list(verdict.findings)}
    from course.labs import lab06

    key = lab06.LAB.key("act1_ratio")
    judged = lambda text, **kw: judge_json("lab06_act1_ratio", text, **kw)
    assert judged(f'{{"value": {2 * key}}}').code == "factor_of_2"
    assert catalog.classify_wrong(row(judged(f'{{"value": {2 * key}}}'))) == ["a factor of 2 off"]
    assert judged(f'{{"value": {key / 1000}}}').code == "factor_of_1000"
    assert catalog.classify_wrong(row(judged(f'{{"value": {key / 1000}}}'))) == ["a factor of 1000 off"]
    # assigned by a cell that failed: an error in a cell, which the report counts as not answered
    assert judged('{"value": {"__raised__": "NameError"}}').code == "error_in_cell"
    assert catalog.classify_wrong(row(judged('{"value": {"__raised__": "NameError"}}'))) == ["not answered"]
    # a blank answer (the release's stub assigns nothing, as the grader reads the notebook's text) or None
    unbound = lambda harvested: {**harvested, "__unbound__": ["naive_over_ring"]}
    assert judged('{"value": {"__raised__": "NameError"}}', adjust=unbound).code == "not_answered"
    assert judged('{"value": null}').code == "not_answered"
    assert catalog.classify_wrong(row(judged('{"value": null}'))) == ["not answered"]
    small = lab06.LAB.key("act2_small")  # µs
    assert judge_json("lab06_act2_small", f'{{"value": {small / 1000}}}').code == "factor_of_1000"
    labels = catalog.class_labels()
    assert labels["bits_for_bytes"] == "a factor of 8 off"
    assert labels["order_of_magnitude"] == "wrong order of magnitude"


def test_the_report_reads_codes_never_the_reason():
    """Rewording a reason moves no answer between classes; a blank reflection (the grader's row for a hand-graded
    answer left as released) is not answered, not other."""
    reworded = {"points": 0.0, "max_points": 1.0, "reason": "quite some other words", "checks": [],
                "code": "factor_of_2", "findings": ["factor_of_2"]}
    assert catalog.classify_wrong(reworded) == ["a factor of 2 off"]
    blank_reflection = {"points": 0.0, "max_points": 2.0, "status": "nbgrader", "reason": "not answered",
                        "checks": [], "code": "not_answered", "findings": ["not_answered"]}
    assert catalog.classify_wrong(blank_reflection) == ["not answered"]
    two = {"points": 0.0, "max_points": 1.0, "reason": "", "checks": [], "code": "off_by_one",
           "findings": ["off_by_one", "not_answered"]}
    assert catalog.classify_wrong(two) == ["off by one", "not answered"]
    check = {"check": "random inputs", "points": 0.0, "max_points": 0.5, "reason": "", "codes": ["raises"]}
    assert catalog.classify_wrong({"points": 1.5, "max_points": 2.0, "checks": [check]}) == [
        "random inputs: raises an exception"]
    assert catalog.classify_wrong({"points": 0.0, "max_points": 1.0, "reason": "`x` is not defined",
                                   "checks": []}) == ["other"]  # no code: graded before codes existed


def test_locks_and_parts_come_from_the_declarations():
    locks = catalog.locks("lab06_bandwidth_invariant")
    assert [lock["key"] for lock in locks] == ["lab06/act1", "lab06/act2"]
    assert all(lock["correct"] in lock["options"] and lock["explanation"] for lock in locks)
    parts = catalog.parts("lab06_bandwidth_invariant")
    assert parts["lab06_act1_ratio"]["act"] == "act1" and parts["lab06_act1_why"]["kind"] == "written"
    assert catalog.parts("ch02_gradient_accumulation")["ch02_ex2_4"]["kind"] == "build"
    assert catalog.locks("ch02_gradient_accumulation") == []


def test_a_short_salt_is_refused():
    with pytest.raises(ValueError, match="salt"):
        anonymise({"assignments": []}, "short")


def test_a_notebook_the_grader_could_not_read_is_left_out_of_the_item_statistics(tmp_path):
    """Counted are the students whose submission the grader could run or read: a file that is not a
    notebook has no answers, like a missing one, and its zeros would only lower every part's share right."""
    from autograder.reports.build import assignment_report

    parts = catalog.parts("ch02_gradient_accumulation")

    def row(student, status, points):
        return {"student": student, "status": status, "reason": status, "score": points * len(parts),
                "max_score": float(len(parts)), "variant": 1,
                "parts": [{"part": p, "points": points, "max_points": 1.0, "status": "judged", "reason": "",
                           "checks": [], "kernel_points": points} for p in parts]}

    grades = {"assignment": "ch02_gradient_accumulation",
              "students": [row("ada", "graded", 1.0), row("bo", "graded", 0.0), row("hank", "unreadable", 0.0),
                           row("mo", "missing", 0.0)]}
    report = assignment_report(grades, {}, {}, None, tmp_path)
    assert report["counted"] == 2 and report["excluded"] == 2
    assert [s["student"] for s in report["students"] if not s["counted"]] == ["hank", "mo"]
    assert all(p["share_right"] == 0.5 for p in report["parts"])


def test_wrong_answers_read_as_lines_at_1200_px(browser):
    """At 1,200 px the 'classified wrong answers' column was squeezed to ~160 px, a few words a line (student
    audit): each class the feedback hints use, with its count, reads on one line, two for the longest."""
    from autograder.reports.render import CSS, _parts

    labels = list(dict.fromkeys(catalog.class_labels().values()))
    long_first = sorted(labels, key=len, reverse=True)[:4] + ["not answered"]
    part = lambda gid, title, wrong: {
        "grade_id": gid, "title": title, "kind": "derive", "max_points": 1.0, "graded_by_hand": False,
        "share_right": 0.62, "discrimination": 0.35, "item_total": 0.73, "distribution": {"0": 8, "1": 13},
        "pending": 0, "wrong": [{"class": w, "count": 3} for w in wrong]}
    rep = {"assignment": "lab06_bandwidth_invariant", "counted": 21,
           "parts": [part("lab06_act1_ratio", "Act I: naive / ring time on your cluster", long_first),
                     part("lab06_act2_small_update", "Act II: the small update's time with the fastest algorithm",
                          labels[:3])]}
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    page.set_content(f"<!DOCTYPE html><html><head><style>{CSS}</style></head><body><main>{_parts(rep)}</main>"
                     "</body></html>")
    cells = page.evaluate("""() => {
      const t = document.querySelector('table');
      const i = [...t.querySelectorAll('thead th')].findIndex(h => h.textContent === 'classified wrong answers');
      return [...t.querySelectorAll('tbody tr')].map(r => {
        // lines of text in the cell (the cell itself is as tall as its row): distinct tops of its text's boxes
        const c = r.children[i], walk = document.createTreeWalker(c, NodeFilter.SHOW_TEXT), tops = new Set();
        for (let n = walk.nextNode(); n; n = walk.nextNode()) {
          const range = document.createRange();
          range.selectNodeContents(n);
          for (const b of range.getClientRects()) if (b.width > 0) tops.add(Math.round(b.top / 4));
        }
        return {width: c.getBoundingClientRect().width, lines: tops.size};
      });
    }""")
    page.close()
    for cell, wrong in zip(cells, (long_first, labels[:3])):
        allowed = len(wrong) + sum(len(w) > 28 for w in wrong)  # one line each, two for a long one
        assert cell["lines"] <= allowed, (cell, wrong)


def test_counts_read_in_the_number_they_ask_for():
    from autograder.reports.render import _parts, counted

    assert [counted(1, "part"), counted(2, "part"), counted(0, "student"), counted(1.0, "pt", "pts")] == [
        "1 part", "2 parts", "0 students", "1 pt"]
    one = {"grade_id": "ch02_ex2_1", "title": "2.1", "kind": "derive", "max_points": 1.0, "graded_by_hand": False,
           "share_right": 1.0, "discrimination": None, "item_total": None, "distribution": {"1": 1}, "wrong": []}
    html = _parts({"assignment": "ch02_gradient_accumulation", "counted": 1, "parts": [one]})
    assert "over 1 student " in html and "1 pt: 1" in html and "1 students" not in html


def test_the_page_is_a_template_that_keeps_every_value_text():
    """report.html comes from a Jinja2 template with autoescaping: a student id, an option's text or a
    ledger key that holds markup reads as those characters, and the page's own markup is intact."""
    from autograder.reports.render import render

    hostile = "<img src=x onerror=alert(1)>"
    rep = {"assignment": "ch02_gradient_accumulation", "title": "Chapter 2", "students_total": 1, "counted": 1,
           "excluded": 0, "seed": 7, "shard": None, "prediction_vs_outcome": [],
           "locks": [{"act_title": "Act I", "key": "lab06/act1", "question": "Which?", "locked": 1, "right": 0,
                      "share_right": 0.0, "no_prediction": 0, "not_an_option": 0, "explanation": hostile,
                      "options": [{"option": "A", "correct": True, "text": hostile, "count": 1}]}],
           "parts": [], "ledger": {"students": 1, "entries": [
               {"key": hostile, "students": 1, "mean_attempts": 2.0, "share_passed": 1.0, "predictions": 1,
                "failures_hit": {}}]},
           "students": [{"student": hostile, "feedback": "feedback/x/ch02.html", "status": "graded", "score": 1.0,
                         "max_score": 2.0, "final_score": 1.0, "late_days": 0, "locks": {"lab06/act1": hostile},
                         "parts": {}}]}
    page = render({"generated": "now", "assignments": [rep], "method": {"discrimination": "r", "counted": "all"},
                   "term": {"acts": [], "chapters": [], "kinds": []}})
    assert "<img" not in page and page.count("&lt;img src=x onerror=alert(1)&gt;") == 5
    assert page.startswith("<!DOCTYPE html>") and page.endswith("</html>\n")
    assert '<a href="feedback/x/ch02.html">' in page and "<style>" in page and "1 student;" in page
