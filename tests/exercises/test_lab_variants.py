"""Per-student variants of the labs' graded questions (Lab 05, Lab 06, the tutorial).

The story, the instruments and the locks keep each lab's own numbers; every graded numeric
question asks about the student's own case, rendered by a read-only prompt cell. The judge
recomputes the key for the graded student's variant, carried by the seed.
"""

from __future__ import annotations

import json

import nbformat
import numpy as np
import pytest

from course.core import catalog
from course.notebook_api import judge_json
from course.assess.variants import student_seed, variant_of
from course.labs import lab05, lab06, tutorial
from course.notebook_api.lab_session import labs

LABS = {lab.name: lab for lab in labs().values()}
NUMERIC = [(lab.name, a.id) for lab in LABS.values() for act in lab.acts for a in act.answers
           if a.kind == "derive"]


def _spec(lab, student):
    return lab.spec_for(variant_of(lab.name, student))


def test_variants_are_on_for_every_lab_in_the_committed_configuration():
    from course.assess.variants import settings

    assert all(settings(name)["variants"] for name in LABS)


@pytest.mark.parametrize("name, answer_id", NUMERIC)
def test_two_students_get_different_numbers_on_every_numeric_question(name, answer_id):
    lab = LABS[name]
    assert lab.varies(answer_id)
    ada, cy = lab.key(answer_id, _spec(lab, "ada")), lab.key(answer_id, _spec(lab, "cy"))
    assert abs(ada - cy) > 0.05 * abs(ada), (ada, cy)  # far outside the 2 % tolerance


def test_lab05_act1_key_by_hand_for_a_students_numbers():
    s = _spec(lab05.LAB, "ada")
    link = catalog.link(s["act1_link"])
    n, m = s["act1_gpus"], s["act1_params_b"] * 1e9 * 2  # bf16: 2 bytes per parameter
    by_hand = 2 * (n - 1) * link.latency + 2 * (n - 1) / n * m / link.bandwidth
    assert lab05.LAB.key("act1_allreduce", s) == pytest.approx(by_hand, rel=1e-9)
    assert s != lab05.SPEC


def test_lab06_ratio_is_about_the_students_own_n():
    s = _spec(lab06.LAB, "ada")
    assert s["act1_gpus"] != 128 and s["gpus"] == 128  # the story and Act II keep 128
    assert lab06.LAB.key("act1_ratio", s) == pytest.approx(s["act1_gpus"], rel=0.01)


def test_tutorial_bubble_by_hand_for_a_students_pipeline():
    s = _spec(tutorial.LAB, "cy")
    p, m = s["bubble_stages"], s["bubble_microbatches"]
    assert tutorial.LAB.key("ex2_bubble", s) == pytest.approx((p - 1) / (m + p - 1))


@pytest.mark.parametrize("variant", range(0, 4000, 37))
def test_every_draw_is_a_valid_case_that_keeps_the_reveals_true(variant):
    s = lab05.LAB.spec_for(variant)
    tp, pp, dp = s["act2_tp"], s["act2_pp"], s["act2_dp"]
    assert tp * pp * dp == 1024 and s["act2_microbatches"] >= pp and s["act2_microbatches"] <= 64
    assert (tp, pp) != (8, 4)  # the source's answer: its reveal states its memory
    savings = lab05.part3_savings(s)
    assert savings["async_saves"] > savings["zero_saves"] > 0  # Part 3's reveal (async wins) stays right
    assert 2 <= lab06.LAB.spec_for(variant)["act1_gpus"] <= 4096  # within the comparator's slider
    t = tutorial.LAB.spec_for(variant)
    assert t["bubble_microbatches"] >= t["bubble_stages"] // 2 and t["ex3_gpus"] % 8 == 0


def test_part3_zero_saves_has_many_keys_each_outside_the_others_tolerance():
    # N alone gave 4 keys, so a copy from a quarter of the class passed; delta and the MTBF vary too
    keys = sorted({round(lab05.LAB.key("part3_zero_saves", lab05.LAB.spec_for(v)), 2) for v in range(400)})
    assert len(keys) >= 36
    assert all(b / a > 1.02 for a, b in zip(keys, keys[1:]))


@pytest.mark.parametrize("lab, answer_id, at_least", [
    (lab05.LAB, "act1_allreduce", 44), (lab05.LAB, "act2_memory", 29), (tutorial.LAB, "ex1_memory", 31),
    (tutorial.LAB, "ex2_bubble", 34), (tutorial.LAB, "ex3_best", 45)])
def test_drawn_cases_have_many_keys_none_within_twice_the_tolerance_of_another(lab, answer_id, at_least):
    # a handful of cases let about one pair of students in 10 share a key; the cases are chosen so that
    # every key stands more than 4 % (twice the 2 % tolerance) from the next at the same draw of the rest
    by_case = {}
    for v in range(1500):
        s = lab.spec_for(v)
        by_case.setdefault(lab.key(answer_id, s), s)
    keys = sorted(by_case)
    distinct = [keys[0]] + [b for a, b in zip(keys, keys[1:]) if b / a > 1.0001]
    assert len(distinct) >= at_least
    # keys that differ only by Act I's GPU count (the latency term) are the same case; all others stand apart
    groups = [[distinct[0]]]
    for a, b in zip(distinct, distinct[1:]):
        (groups[-1].append(b) if b / a < 1.02 else groups.append([b]))
    assert len(groups) >= at_least
    assert all(g2[0] / g1[-1] > 1.04 for g1, g2 in zip(groups, groups[1:]))


def test_lab06_act1_ratio_has_many_keys_each_outside_the_others_tolerance():
    # 10 GPU counts let about one pair of students in 10 share a key; whole nodes 6 % apart give 40+
    counts = {lab06.LAB.spec_for(v)["act1_gpus"] for v in range(600)}
    assert all(n % 8 == 0 and 16 <= n <= 1024 and n != 128 for n in counts)
    keys = sorted(lab06.LAB.key("act1_ratio", lab06.LAB.spec_for(v)) for v in range(600))
    keys = sorted(set(round(k, 6) for k in keys))
    assert len(keys) >= 40
    assert all(b / a > 1.04 for a, b in zip(keys, keys[1:]))  # twice the 2 % tolerance apart


@pytest.mark.parametrize("name", sorted(LABS))
def test_markdown_never_holds_a_number_that_varies(name):
    lab = LABS[name]
    own = [c.source for c in lab.cells() if c.role == "markdown"]
    for variant in range(40):
        assert [c.source for c in lab.cells(variant) if c.role == "markdown"] == own
    prompts = [c for c in lab.cells() if c.role == "prompt"]
    assert len(prompts) == sum(lab.varies(a.id) for act in lab.acts for a in act.answers) > 0


@pytest.mark.parametrize("name", sorted(LABS))
def test_release_prompt_cells_are_read_only_and_hold_no_numbers(name):
    nb = nbformat.read(f"release/{name}/{name}.ipynb", 4)
    prompts = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id", "").endswith("_prompt")]
    assert prompts
    for cell in prompts:
        assert cell.metadata["nbgrader"]["locked"] is True
        assert cell.source.splitlines()[-1].startswith("lab.show(")
        assert not any(ch.isdigit() for ch in cell.source.splitlines()[-1].replace("act1", "").replace(
            "act2", "").replace("act3", "").replace("part3", "").replace("ex1", "").replace("ex2", "").replace("ex3", ""))


def test_the_judge_grades_each_student_against_their_own_key():
    lab = lab05.LAB
    ada_key = lab.key("act2_memory", _spec(lab, "ada"))
    cy_key = lab.key("act2_memory", _spec(lab, "cy"))
    harvested = json.dumps({"value": ada_key})
    assert judge_json("lab05_act2_memory", harvested, student_seed(lab.name, "ada", 5)).score == 1
    assert judge_json("lab05_act2_memory", harvested, student_seed(lab.name, "cy", 5)).score == 0
    assert judge_json("lab05_act2_memory", json.dumps({"value": cy_key}), student_seed(lab.name, "cy")).score == 1


def test_a_wrong_graded_number_says_how_it_is_wrong_without_the_key():
    lab, seed = lab05.LAB, student_seed(lab05.LAB.name, "ada")
    key = lab.key("act2_memory", _spec(lab, "ada"))  # GB
    in_mb = judge_json("lab05_act2_memory", json.dumps({"value": key * 1000}), seed)
    assert in_mb.score == 0 and in_mb.code == "factor_of_1000" and "MB vs GB" in in_mb.reason
    near = judge_json("lab05_act2_memory", json.dumps({"value": key * 1.3}), seed)  # within a factor of 3
    assert near.score == 0 and near.code == "close"
    for verdict in (in_mb, near):
        assert f"{key:.4g}" not in verdict.reason and f"{key:.3g}" not in verdict.reason


def test_lab06_act2_asks_each_student_about_their_own_update_and_the_winner_changes():
    """Act II's graded time is the fastest algorithm's on the student's own update, GPU count and link; over
    a class, recursive doubling wins for some and Rabenseifner's algorithm for others."""
    lab = lab06.LAB
    assert lab.varies("act2_small")
    winners = set()
    for student in [f"s{i:02d}" for i in range(40)]:
        s = _spec(lab, student)
        link = catalog.link(s["act2_link"])
        n, m, alpha, b = s["act2_gpus"], s["act2_bytes"], link.latency, link.bandwidth
        lg = (n - 1).bit_length()
        # the alpha-beta costs by hand (Thakur et al. 2005): the key is the smallest
        by_hand = {"recursive_doubling": lg * (alpha + m / b),
                   "rabenseifner": 2 * lg * alpha + 2 * (n - 1) / n * m / b,
                   "ring": 2 * (n - 1) * alpha + 2 * (n - 1) / n * m / b,
                   "tree": 2 * lg * (alpha + m / b)}
        fastest = min(by_hand, key=by_hand.get)
        winners.add(fastest)
        assert lab.key("act2_small", s) == pytest.approx(by_hand[fastest] * 1e6, rel=0.01)
        prompt = lab.question_markdown("act2_small", s)
        on_the_slider = np.format_float_positional(m / 1e9, trim="-")  # as the M slider reads it: 0.00002, not 2e-05
        for shown in (f"N = {n} GPUs", f"M = {m:,.0f} bytes", f"{on_the_slider} GB on the dashboard's slider",
                      link.name, f"B = {b / 1e9:g} GB/s", f"\u03b1 = {alpha * 1e6:g} \u00b5s", f"= {lg})"):
            assert shown in prompt, (student, shown)
        # a copied time is another update's: right only when the two keys agree within the 2 %
        seed = student_seed(lab.name, student)
        assert judge_json("lab06_act2_small", json.dumps({"value": lab.key("act2_small", s)}), seed).score == 1
    assert winners == {"recursive_doubling", "rabenseifner"}
    assert lab.key("act2_small") == pytest.approx(lab.key("act2_small", _spec(lab, None)))  # the story's numbers


def test_the_kernel_session_shows_the_students_own_numbers(monkeypatch, tmp_path, capsys):
    from course.notebook_api.lab_session import LabSession

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COURSE_STUDENT", "ada")
    session = LabSession("lab06", folder=tmp_path, ledger=tmp_path / "ledger.json")
    session.whoami()
    session.show("act1_ratio")
    out = capsys.readouterr().out
    n = _spec(lab06.LAB, "ada")["act1_gpus"]
    assert "numbers for student 'ada'" in out
    assert f"Your team's cluster has N = {n} GPUs" in out and "within 2 %" in out
    assert session.spec["act1_gpus"] == n


def test_plain_nbgrader_hidden_test_grades_the_student_of_the_grading_folder(tmp_path, monkeypatch):
    from course.notebook_api import grade_in_kernel

    folder = tmp_path / "autograded" / "bob" / lab06.NAME
    folder.mkdir(parents=True)
    monkeypatch.chdir(folder)
    monkeypatch.setenv("JUPYTERHUB_USER", "instructor")  # nbgrader runs as the instructor on a hub
    bob = lab06.LAB.key("act1_ratio", _spec(lab06.LAB, "bob"))
    grade_in_kernel("lab06_act1_ratio", {"naive_over_ring": bob})
    with pytest.raises(AssertionError):
        grade_in_kernel("lab06_act1_ratio", {"naive_over_ring": lab06.LAB.key("act1_ratio")})


def test_cli_prints_a_students_lab_numbers_keys_and_worked_answers(capsys):
    from course.cli import main

    assert main(["variant", lab05.NAME, "--student", "ada", "--derivations"]) == 0
    out = capsys.readouterr().out
    s = _spec(lab05.LAB, "ada")
    assert f"TP = {s['act2_tp']}, PP = {s['act2_pp']}, DP = {s['act2_dp']}" in out
    assert f"key lab05_act2_memory: {json.dumps(lab05.LAB.key('act2_memory', s))}" in out
    assert f"pp={s['act2_pp']}, dp={s['act2_dp']}" in out  # the worked answer, with ada's layout


def test_feedback_renders_the_students_prompts_and_worked_answers():
    from course.notebook_api.feedback import insert_derivations

    nb = nbformat.read(f"release/{tutorial.NAME}/{tutorial.NAME}.ipynb", 4)
    insert_derivations(nb, "cy")
    s = _spec(tutorial.LAB, "cy")
    prompt = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "tutorial_ex2_bubble_prompt")
    assert (f"a pipeline of {s['bubble_stages']} stages with {s['bubble_microbatches']} micro-batches"
            in prompt.outputs[0]["data"]["text/markdown"])
    worked = next(c.source for c in nb.cells if c.metadata.get("course", {}).get("derivation") == "tutorial_ex2_bubble")
    assert f"pipeline_bubble = {s['bubble_stages'] - 1} / ({s['bubble_microbatches']} + {s['bubble_stages'] - 1})" in worked
    insert_derivations(nb, "cy")  # idempotent
    assert sum(c.metadata.get("course", {}).get("derivation") == "tutorial_ex2_bubble" for c in nb.cells) == 1
