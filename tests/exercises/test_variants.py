"""Per-student variants, instant feedback and mastery, in process (the nbgrader runs are in tests/assignments)."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math

import pytest

from course.notebook_api import REGISTRY, check, grade_in_kernel, judge_json, harvest_json
from course.assess import checks, variants
from course.activities import ACTIVITIES, EXERCISES
from course.assess.spec import spec_for
from course.assess.variants import current_student, grading_seed, split_seed, variant_of


def _assignment(ex):
    return ex.assignment


def _spec(number, student):
    ex = EXERCISES[number]
    return spec_for(ex, variant_of(_assignment(ex), student))


def _honest(number, student):
    """The chapter's hand-written solution code, run with ``student``'s numbers."""
    ex = EXERCISES[number]
    namespace = {}
    for cell in ex.cells(_spec(number, student)):
        if cell.role == "answer":
            exec(cell.source, namespace)
    return namespace


def _seed(number, student):
    return grading_seed(0, variant_of(_assignment(EXERCISES[number]), student))


# --- identity and seeds ----------------------------------------------------------------------------

def test_identity_precedence_grading_folder_then_hub_then_local_setting():
    env = {"JUPYTERHUB_USER": "hubuser", "COURSE_STUDENT": "laptop"}
    assert current_student("/c/autograded/ada/ch00_ring_allreduce", env) == ("ada", "nbgrader grading folder")
    assert current_student("/home/jovyan/work", env) == ("hubuser", "JupyterHub user")
    assert current_student("/home/me", {"COURSE_STUDENT": "laptop"}) == ("laptop", "COURSE_STUDENT")
    assert current_student("/home/me", {}) == (None, "nobody")
    assert current_student("/home/me", {"COURSE_STUDENT": "../etc"})[0] is None  # not an id


def test_course_student_setting_is_used_on_a_laptop(tmp_path, monkeypatch, capsys):
    from course.cli import main

    monkeypatch.setattr(variants, "student_file", lambda: tmp_path / "student")
    monkeypatch.chdir(tmp_path)
    assert main(["student", "ada"]) == 0
    assert current_student() == ("ada", "course student setting")
    monkeypatch.setenv("COURSE_STUDENT", "bob")  # the environment beats the saved file
    assert current_student()[0] == "bob"


def test_variant_is_a_hash_of_course_assignment_and_student():
    digest = hashlib.sha256(b"distributed-training-course\0ch00_ring_allreduce\0ada").digest()
    assert variant_of("ch00_ring_allreduce", "ada") == int.from_bytes(digest[:4], "big") & 0x7FFFFFFF
    assert variant_of("ch00_ring_allreduce", "ada") != variant_of("ch01_zero", "ada")
    assert variant_of("ch00_ring_allreduce", None) is None


def test_the_committed_configuration_turns_variants_on_for_every_workbook_chapter_and_lab():
    assert all(variants.variants_on(a.name) for a in ACTIVITIES)
    assert all(variants.variants_on(a) for a in ("lab05_parallelism_paradox", "lab06_bandwidth_invariant",
                                                 "tutorial_3d_parallelism"))
    assert variants.SETTINGS == {}, "the committed configuration is the defaults: variants on, exact feedback"


def test_an_instructor_edits_one_assignment_without_changing_any_other(monkeypatch):
    # a fresh process whose only entry is the instructor's (the old trap: adding one entry to an
    # empty SETTINGS kept the committed ones from loading, so every other assignment lost its variants)
    monkeypatch.setattr(variants, "SETTINGS", {"ch03_lr_scaling": {"feedback": "exam"}})
    assert variants.settings("ch03_lr_scaling") == {"variants": True, "feedback": "exam"}
    others = [a.name for a in ACTIVITIES if a.name != "ch03_lr_scaling"]
    assert others and all(variants.settings(name) == {"variants": True, "feedback": "exact"} for name in others)
    assert all(variant_of(name, "ada") is not None for name in others)
    monkeypatch.setitem(variants.SETTINGS, "lab05_parallelism_paradox", {"variants": False})
    assert variant_of("lab05_parallelism_paradox", "ada") is None
    assert variants.settings("ch03_lr_scaling")["feedback"] == "exam" and variant_of("ch00_ring_allreduce", "ada") is not None
    monkeypatch.setitem(variants.SETTINGS, "ch00_ring_allreduce", {"feedback": "quiz"})
    with pytest.raises(ValueError, match="feedback"):
        variants.settings("ch00_ring_allreduce")


def test_an_instructor_can_switch_an_assignment_off(monkeypatch):
    monkeypatch.setitem(variants.SETTINGS, "ch00_ring_allreduce", {"variants": False})
    assert variant_of("ch00_ring_allreduce", "ada") is None
    assert spec_for(EXERCISES["0.1"], variant_of("ch00_ring_allreduce", "ada")) == EXERCISES["0.1"].spec


def test_grading_seed_keeps_probe_seed_and_variant_apart():
    for probe in (0, 7, 2**31 - 1):
        for variant in (None, 0, 12345, 2**31 - 1):
            assert split_seed(grading_seed(probe, variant)) == (probe, variant)
    with pytest.raises(ValueError, match="seed"):
        split_seed(-1)


# --- two students, honest and copied answers --------------------------------------------------------

VARIED = sorted((n for n, ex in EXERCISES.items() if ex.varies), key=lambda n: tuple(map(int, n.split("."))))


def test_every_exercise_whose_numbers_can_vary_does():
    fixed = sorted(set(EXERCISES) - set(VARIED))
    # 3.4 is written (graded by hand); every other exercise, choices and designs included, varies
    assert fixed == ["3.4"]
    assert len(VARIED) == 71


@pytest.mark.parametrize("number", VARIED)
def test_two_students_get_different_numbers(number):
    ex = EXERCISES[number]
    a, b = variant_of(_assignment(ex), "ada"), variant_of(_assignment(ex), "bob")
    assert ex.prompt(spec_for(ex, a)) != ex.prompt(spec_for(ex, b))
    for part in ex.parts:
        if part.kind in ("derive", "trace"):
            assert part.value.key(spec_for(ex, a)) != part.value.key(spec_for(ex, b)), part.grade_id


def test_a_copied_answer_passes_for_few_classmates():
    # ada/bob is one pair; over a class, a part whose keys crowd into a few values (7 powers of two,
    # 92-99 %) let a copied answer pass for one classmate in 3 to 6. Every derive/trace part now stays
    # under one in 8 (measured: at most about 1 in 15).
    students = [f"s{i:02d}" for i in range(60)]
    worst = []
    for number in VARIED:
        ex = EXERCISES[number]
        parts = [p for p in ex.parts if p.kind in ("derive", "trace")]
        if not parts:
            continue
        honest = {st: _honest(number, st) for st in students}
        seeds = {st: _seed(number, st) for st in students}
        for part in parts:
            passed = sum(part.grade(honest[a], seeds[b]).score > 0 for a in students for b in students if a != b)
            worst.append((passed / (len(students) * (len(students) - 1)), part.grade_id))
    assert max(worst)[0] < 1 / 8, sorted(worst)[-5:]


@pytest.mark.parametrize("number", VARIED)
def test_honest_answers_earn_full_points_and_copied_ones_zero(number):
    ex = EXERCISES[number]
    ada = _honest(number, "ada")
    for part in ex.parts:
        assert part.grade(ada, _seed(number, "ada")).passed, part.grade_id
        if part.kind in ("derive", "trace"):  # ada's values in bob's notebook
            assert part.grade(ada, _seed(number, "bob")).score == 0.0, part.grade_id


def test_the_autograder_path_judges_with_the_seed_it_was_given():
    ada = _honest("2.1", "ada")
    text = harvest_json("ch02_ex2_1", ada, _seed("2.1", "ada"))
    assert judge_json("ch02_ex2_1", text, _seed("2.1", "ada")).passed
    assert not judge_json("ch02_ex2_1", text, _seed("2.1", "bob")).passed


def test_plain_nbgrader_hidden_tests_grade_the_student_of_the_grading_folder(tmp_path, monkeypatch):
    folder = tmp_path / "autograded" / "ada" / "ch02_gradient_accumulation"
    folder.mkdir(parents=True)
    monkeypatch.chdir(folder)
    monkeypatch.setenv("JUPYTERHUB_USER", "instructor")  # nbgrader runs as the instructor on a hub
    grade_in_kernel("ch02_ex2_1", _honest("2.1", "ada"))
    with pytest.raises(AssertionError, match="does not match"):
        grade_in_kernel("ch02_ex2_1", _honest("2.1", "bob"))


def test_build_probes_include_the_students_own_worked_example():
    part = REGISTRY["ch00_ex0_5"]
    example = _spec("0.5", "ada")["example"]
    assert part.probes(_seed("0.5", "ada"))["valid"][0] == example
    assert example not in part.probes(0)["valid"][:1]


# --- instant feedback in the visible check ---------------------------------------------------------

@pytest.fixture
def as_ada(monkeypatch, tmp_path):
    monkeypatch.setenv("COURSE_STUDENT", "ada")
    monkeypatch.setenv("COURSE_LEDGER", str(tmp_path / "ledger.json"))


def _ring_volume_gb(spec):
    # by hand: each GPU sends 2 (N - 1) / N of the message
    return 2 * spec["message_gb"] * (spec["n"] - 1) / spec["n"]


def test_check_says_right_for_the_students_own_key_and_shows_the_derivation(as_ada, capsys):
    spec = _spec("0.1", "ada")
    check("0.1", {"volume_gb": _ring_volume_gb(spec) * 1.005})  # inside the stated 1 %
    out = capsys.readouterr().out
    assert "right" in out and "not yet" not in out
    assert "Worked derivation" in out and f"{spec['message_gb']:g} GB" in out


@pytest.mark.parametrize("factor", [1.2, 1.5, 2.5, 0.4])
def test_a_wrong_value_within_a_factor_of_3_is_wrong(as_ada, capsys, factor):
    from course.ledger import Ledger

    check("0.1", {"volume_gb": _ring_volume_gb(_spec("0.1", "ada")) * factor})
    out = capsys.readouterr().out
    assert "not yet" in out and "plausible" not in out
    from course.assess.attempts import current_identity, record_of

    assert record_of(Ledger().get("ch00/ex0_1"), current_identity("ch00_ring_allreduce"))["passed"] is False


def test_the_workbooks_wrong_answers_are_reported_wrong(monkeypatch, tmp_path, capsys):
    # no student id: the workbook's own numbers, where its 6.2 (56 MB) and 6.5 (9.6 %) are wrong
    monkeypatch.setenv("COURSE_LEDGER", str(tmp_path / "ledger.json"))
    check("6.2", {"allreduce_mb_per_gpu": 56.0})
    check("6.5", {"tp_overhead_pct": 9.6})
    out = capsys.readouterr().out
    assert out.count("not yet") >= 2 and "right." not in out


def test_a_unit_slip_gets_its_hint(as_ada, capsys):
    check("0.1", {"volume_gb": _ring_volume_gb(_spec("0.1", "ada")) * 1e9})  # bytes, not GB
    assert "factor of 10^9" in capsys.readouterr().out


def test_the_derivation_is_offered_after_n_different_wrong_answers(as_ada, capsys, monkeypatch):
    monkeypatch.setattr(variants, "DERIVATION_AFTER_ATTEMPTS", 2)
    check("0.1", {"volume_gb": 1e-3})
    assert "Worked derivation" not in capsys.readouterr().out
    for _ in range(3):  # the same answer again (a re-run, Run All, a restart): no attempt, no derivation
        check("0.1", {"volume_gb": 1e-3})
        out = capsys.readouterr().out
        assert "Worked derivation" not in out and "attempt 1: this answer was checked before" in out
    check("0.1", {"volume_gb": 2e-3})  # a second, different wrong answer
    out = capsys.readouterr().out
    assert "attempt 2)" in out and "Worked derivation" in out


def test_attempts_and_passes_belong_to_one_student_on_their_numbers(as_ada, capsys, monkeypatch):
    from course.assess.attempts import current_identity, record_of
    from course.ledger import Ledger

    right = _ring_volume_gb(_spec("0.1", "ada"))
    check("0.1", {"volume_gb": right / 2})
    check("0.1", {"volume_gb": right})
    ada = current_identity("ch00_ring_allreduce")
    assert record_of(Ledger().get("ch00/ex0_1"), ada) == {**record_of(Ledger().get("ch00/ex0_1"), ada),
                                                          "attempts": 2, "passed": True}
    monkeypatch.setenv("COURSE_STUDENT", "grace")  # `course student grace` and a restart
    capsys.readouterr()
    grace = current_identity("ch00_ring_allreduce")
    assert abs(_ring_volume_gb(_spec("0.1", "grace")) / right - 1) > 0.05  # other numbers
    assert grace != ada and record_of(Ledger().get("ch00/ex0_1"), grace) == {}
    check("0.1", {"volume_gb": right})  # ada's right answer, on grace's other numbers
    out = capsys.readouterr().out
    assert "not yet (attempt 1)" in out and "Worked derivation" not in out
    assert record_of(Ledger().get("ch00/ex0_1"), grace)["passed"] is False


def test_an_unanswered_check_counts_no_attempt_and_reveals_nothing(as_ada, capsys, monkeypatch, tmp_path):
    # a student who runs every check cell of a blank notebook (Run All, or three Validate clicks)
    # must not walk into the worked derivations
    monkeypatch.setenv("COURSE_LEDGER", str(tmp_path / "ledger.json"))
    monkeypatch.setattr(variants, "DERIVATION_AFTER_ATTEMPTS", 1)
    from course.ledger import Ledger

    for _ in range(3):
        check("0.1", {})
        out = capsys.readouterr().out
        assert "not answered yet" in out and "`volume_gb`" in out and "Worked derivation" not in out
    assert not (Ledger().get("ch00/ex0_1") or {}).get("by_identity")
    check("0.1", {"volume_gb": 1e-3})  # an answer, even a wrong one, is an attempt
    assert "Worked derivation" in capsys.readouterr().out
    assert Ledger().get("ch00/ex0_1")["by_identity"]  # counted for this student


def test_a_half_answered_check_counts_no_attempt_like_a_blank_one(as_ada, capsys, monkeypatch, tmp_path):
    """Issue 48: 10.1 with `total_b` given and `active_b` not (undefined or None) counted an attempt."""
    monkeypatch.setenv("COURSE_LEDGER", str(tmp_path / "ledger.json"))
    monkeypatch.setattr(variants, "DERIVATION_AFTER_ATTEMPTS", 1)
    from course.ledger import Ledger

    for half in ({"total_b": 12.0}, {"total_b": 12.0, "active_b": None}, {"total_b": 13.0}):
        check("10.1", half)
        out = capsys.readouterr().out
        assert "not complete yet" in out and "`active_b`" in out and "counts no attempt" in out
        assert "Worked derivation" not in out
    assert not (Ledger().get("ch10/ex10_1") or {}).get("by_identity")
    check("10.1", {"total_b": 12.0, "active_b": 3.0})  # complete, wrong: an attempt
    out = capsys.readouterr().out
    assert "not yet (attempt 1)" in out
    assert Ledger().get("ch10/ex10_1")["by_identity"]


def test_exam_mode_checks_only_type_and_units(as_ada, capsys, monkeypatch):
    monkeypatch.setitem(variants.SETTINGS, "ch00_ring_allreduce", {"variants": True, "feedback": "exam"})
    check("0.1", {"volume_gb": 123.0})
    out = capsys.readouterr().out
    assert "is a number" in out and "right" not in out and "not yet" not in out
    assert "Worked derivation" not in out
    check("0.1", {"volume_gb": "12"})
    assert "must be a number" in capsys.readouterr().out


def test_a_build_check_runs_the_students_example_and_the_hidden_judge(as_ada, capsys):
    def ring_allreduce_time(M_gb, N, bw_gbs, latency_us):
        if M_gb < 0 or bw_gbs <= 0 or latency_us < 0 or N < 1 or N != int(N):
            raise ValueError("bad input")
        return float(2 * (N - 1) * (M_gb / N) / bw_gbs * 1000 + 2 * (N - 1) * latency_us / 1000)

    check("0.5", {"ring_allreduce_time": ring_allreduce_time})
    out = capsys.readouterr().out
    example = _spec("0.5", "ada")["example"]
    assert f"ring_allreduce_time({', '.join(map(repr, example))})" in out and "0.5: right" in out


# --- mastery and the streak ------------------------------------------------------------------------

class _Day(dt.date):
    today_is = dt.date(2026, 3, 2)

    @classmethod
    def today(cls):
        return cls.today_is


def test_mastery_and_streak_come_from_real_checks(as_ada, monkeypatch, capsys):
    from course.notebook_api.mastery import mastery

    monkeypatch.setattr(checks._dt, "date", _Day)
    answers = {"0.1": _honest("0.1", "ada"), "2.1": _honest("2.1", "ada"), "0.5": _honest("0.5", "ada")}
    for day, number in ((1, "0.1"), (2, "2.1"), (3, "0.5")):
        _Day.today_is = dt.date(2026, 3, day)
        check(number, answers[number])
    _Day.today_is = dt.date(2026, 3, 3)
    check("0.2", {"time_ms": 1.0})  # a wrong attempt still counts as activity, not as mastery
    capsys.readouterr()
    ada = lambda assignment: variant_of(assignment, "ada")  # noqa: E731 -- a one-line helper local to this function
    data = mastery(today=dt.date(2026, 3, 3), student_variant=ada)
    assert (data["mastered"], data["total"]) == (3, 72)
    assert data["chapters"]["ch00"] == {"mastered": 2, "total": 6}
    assert data["kinds"]["Derive"]["mastered"] == 2 and data["kinds"]["Build"]["mastered"] == 1
    assert (data["streak"], data["best_streak"]) == (3, 3)
    assert data["last_activity"] is not None and data["points"] is None
    assert mastery(today=dt.date(2026, 3, 9), student_variant=ada)["streak"] == 0  # broken, best kept
    # mastered for ada's numbers only: a different student on this ledger has mastered nothing
    assert mastery(today=dt.date(2026, 3, 3), student_variant=lambda a: variant_of(a, "bob"))["mastered"] == 0


def test_graded_full_points_count_as_mastered(as_ada, tmp_path):
    from course.notebook_api.mastery import mastery, record_points

    record_points({"ch02_ex2_2": (1.0, 1.0)})  # as `course import-grades grades.json` records it
    data = mastery(today=dt.date(2026, 3, 3))
    assert data["mastered"] == 1 and data["points"] == data["max_points"]


def test_the_index_mastery_cell_shows_mastery_and_streak(as_ada, tmp_path, monkeypatch):
    """Run the index notebook's own mastery cell in a kernel, after real checks in this ledger."""
    import nbformat
    from nbclient import NotebookClient

    from course.ledger import default_ledger_path

    check("2.1", _honest("2.1", "ada"))
    index = nbformat.read("notebooks/index.ipynb", 4)
    cell = next(c for c in index.cells if c.get("id") == "workbook-mastery")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell.source)])
    NotebookClient(nb, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    html = "".join(o.get("data", {}).get("text/html", "") for o in nb.cells[0].outputs)
    assert "Mastered: 1 / 72" in html and "day streak <b>1</b>" in html
    assert default_ledger_path().exists()


def test_cli_prints_a_students_numbers_and_keys(capsys):
    from course.cli import main

    assert main(["variant", "ch02_gradient_accumulation", "--student", "ada"]) == 0
    out = capsys.readouterr().out
    spec = _spec("2.1", "ada")
    steps = math.ceil(spec["target_batch"] / (spec["micro_batch"] * spec["dp"]))
    assert f"Target effective batch {spec['target_batch']} sequences" in out
    assert f'key ch02_ex2_1: {json.dumps({"accum_steps": steps})}' in out


def test_feedback_shows_the_students_prompt_and_derivation():
    import nbformat

    from course.notebook_api.feedback import insert_derivations

    nb = nbformat.read("release/ch02_gradient_accumulation/ch02_gradient_accumulation.ipynb", 4)
    insert_derivations(nb, "ada")
    spec = _spec("2.1", "ada")
    prompt = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "ch02_ex2_1_prompt")
    assert f"Target effective batch {spec['target_batch']} sequences" in prompt.outputs[0]["data"]["text/markdown"]
    steps = math.ceil(spec["target_batch"] / (spec["micro_batch"] * spec["dp"]))
    derivation = next(c.source for c in nb.cells if c.metadata.get("course", {}).get("derivation") == "2.1")
    assert f"**{steps}**" in derivation


def test_feedback_drops_check_outputs_computed_without_the_students_id(capsys):
    import nbformat
    from nbformat.v4 import new_output

    from course.assess.checks import whoami
    from course.notebook_api.feedback import insert_derivations

    whoami("ch02_gradient_accumulation")  # as in the autograder's sandbox: nobody
    printed = capsys.readouterr().out
    nb = nbformat.read("release/ch02_gradient_accumulation/ch02_gradient_accumulation.ipynb", 4)
    by_id = {c.metadata.get("nbgrader", {}).get("grade_id"): c for c in nb.cells}
    by_id["ch02_setup"].outputs = [new_output("stream", name="stdout", text=printed)]
    by_id["ch02_ex2_1_check"].outputs = [new_output("stream", name="stdout", text="\u2718 not yet\n")]
    insert_derivations(nb, "ada")
    assert "not yet" not in by_id["ch02_ex2_1_check"].outputs[0]["text"]
    assert "without your student id" in by_id["ch02_ex2_1_check"].outputs[0]["text"]
