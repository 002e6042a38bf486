"""Nothing on the page gives a lock away (issue 24, deliverable 1).

A notebook shows every cell at once, so what a student can read before locking is the whole
release notebook (all markdown and code, including the cells below the lock) plus the lock's
own question and options. For every lock of every lab this checks:

(a) **text**: the 4-word shingles (lowercased, punctuation stripped) of what the answer alone
    says (the correct option's words that no other option has, the explanation, the reveal)
    seldom stand on the page. A shingle of four words rarely repeats by chance in a few
    thousand words of technical prose, but shared terminology ("the ring all reduce", "per GPU
    per direction") does; on today's content, the shared vocabulary of a fixed lab stays under
    10 % of the answer's shingles, while the leaks of issue 24 (a sentence of the reveal, a
    reflection stating the answer) each bring whole runs of shingles. The correct option's own
    distinguishing shingles must not stand on the page at all (outside the lock's options).
(b) **code**: no code cell constructs an instrument with the correct option's parameters
    (e.g. ``Configurator(tp=8, pp=4)`` when the correct layout is TP=8, PP=4).
(c) **length**: the correct option is at most 1.5x the median option length, so the longest,
    most qualified option is not a tell.
"""

from __future__ import annotations

import re
import statistics

import nbformat
import pytest

from course.labs.activity import labs

LABS = labs()
SHINGLE = 4
#: at most this share of the answer's shingles (explanation + reveal) may stand on the page
SHARED_VOCABULARY = 0.10
LENGTH_RATIO = 1.5

LOCKS = [(prefix, act.id) for prefix, lab in sorted(LABS.items()) for act in lab.acts if act.lock is not None]


def _words(text: str):
    plain = re.sub(r"[^\w\s]", " ", text.lower().replace("−", "-"))
    return plain.split()


def shingles(text: str, n: int = SHINGLE) -> set:
    """The n-word windows of ``text``, lowercased with punctuation stripped.

    >>> sorted(shingles("The ring, the TREE and the ring!", 4))[:1]
    [('ring', 'the', 'tree', 'and')]
    """
    words = _words(text)
    return {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}


def _page(lab):
    nb = nbformat.read(f"release/{lab.name}/{lab.name}.ipynb", 4)
    markdown = [c.source for c in nb.cells if c.cell_type == "markdown"]
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    return markdown, code


def _page_text(lab, lock) -> str:
    markdown, code = _page(lab)
    return "\n".join(markdown + code + [lock.question])


def _distinguishing(lock) -> set:
    others = set().union(*(shingles(text) for key, text in lock.options.items() if key != lock.correct))
    return shingles(lock.options[lock.correct]) - others


@pytest.mark.parametrize("prefix,act_id", LOCKS)
def test_the_correct_option_and_the_reveal_do_not_stand_on_the_page(prefix, act_id):
    lab = LABS[prefix]
    lock = lab.lock_of(act_id)
    page = shingles(_page_text(lab, lock))
    option_leaks = _distinguishing(lock) & page
    assert not option_leaks, f"{prefix}/{act_id}: the correct option's words stand on the page: {option_leaks}"
    answer = shingles(lock.explanation + "\n" + lock.reveal)
    shared = answer & page
    assert len(shared) <= SHARED_VOCABULARY * len(answer), (
        f"{prefix}/{act_id}: {len(shared)} of {len(answer)} shingles of the explanation and reveal stand on the "
        f"page, e.g. {sorted(shared)[:8]}")


def _parameters(option: str) -> dict:
    """``{'tp': '8', 'pp': '4'}`` from an option such as "TP=8, PP=4, DP=32"."""
    return {k.lower(): v for k, v in re.findall(r"\b([A-Za-z]\w*)\s*=\s*([\d.]+)", option)}


@pytest.mark.parametrize("prefix,act_id", LOCKS)
def test_no_code_cell_builds_the_correct_option(prefix, act_id):
    lab = LABS[prefix]
    lock = lab.lock_of(act_id)
    wanted = _parameters(lock.options[lock.correct])
    if not wanted:  # an option without parameters cannot be typed into a constructor
        return
    wanted.pop("dp", None) if len(wanted) > 2 else None  # DP follows from TP and PP on a fixed cluster
    _, code = _page(lab)
    for source in code:
        for call in re.findall(r"\w+\([^()]*\)", source):
            found = {k.lower(): v for k, v in re.findall(r"\b(\w+)\s*=\s*([\d.]+)", call)}
            assert not all(found.get(k) == v for k, v in wanted.items()), (
                f"{prefix}/{act_id}: `{call}` opens on the correct option {lock.options[lock.correct]!r}")


def test_the_code_check_sees_the_layout_of_issue_24():
    # the leak the check exists for: Lab 05 Act II's configurator opened on the correct layout B
    assert _parameters("TP=8, PP=4, DP=32") == {"tp": "8", "pp": "4", "dp": "32"}
    found = {k: v for k, v in re.findall(r"\b(\w+)\s*=\s*([\d.]+)",
                                          "Configurator(model='gpt3-175b', cluster='h100-1024', tp=8, pp=4)")}
    assert found == {"tp": "8", "pp": "4"}


@pytest.mark.parametrize("prefix,act_id", LOCKS)
def test_the_correct_option_is_not_the_longest_by_far(prefix, act_id):
    lock = LABS[prefix].lock_of(act_id)
    lengths = [len(text) for text in lock.options.values()]
    correct = len(lock.options[lock.correct])
    assert correct <= LENGTH_RATIO * statistics.median(lengths), (
        f"{prefix}/{act_id}: the correct option has {correct} characters, the median {statistics.median(lengths)}")


# -- words a student has (deliverable 5) -------------------------------------------------------------

@pytest.mark.parametrize("prefix", sorted(LABS))
def test_corrections_of_the_source_live_on_the_errata_page_not_in_the_lab(prefix):
    lab = LABS[prefix]
    markdown, code = _page(lab)
    said = "\n".join(markdown + code + [a.lock.reveal + a.lock.explanation for a in lab.acts if a.lock])
    for phrase in ("Correction to the source", "errata", "Errata"):
        assert phrase not in said, f"{prefix}: {phrase!r} stands in the student's path"


def test_terms_are_explained_where_the_labs_first_use_them():
    tutorial = "\n".join(_page(LABS["tutorial"])[0])
    assert "CP, *context parallelism*" in tutorial and "v smaller *chunks*" in tutorial
    assert "*selective*: recompute only" in tutorial
    lab06 = "\n".join(_page(LABS["lab06"])[0])
    assert "**Rabenseifner's algorithm** is a reduce-scatter" in lab06
    assert "*selective recomputation* (keep" in LABS["lab05"].lock_of("act2").reveal


def _squashed(text: str) -> str:
    return re.sub(r"[\s*`]", "", text.lower())


@pytest.mark.parametrize("prefix,act_id", LOCKS)
def test_a_question_shown_before_the_lock_does_not_name_the_correct_option(prefix, act_id):
    """(d) **questions**: a ``lab.show`` question renders its numbers at run time, so (a) and (b) do not
    see it; one that names the correct option (Lab 05 Act II's "Your layout ... TP = 8, PP = 4, DP = 32"),
    for any student's numbers, must be declared ``after_lock`` (rendered once the act is locked)."""
    lab = LABS[prefix]
    act = next(a for a in lab.acts if a.id == act_id)
    option = _squashed(act.lock.options[act.lock.correct])
    specs = [lab.spec] + [lab.spec_for(variant) for variant in range(40)] if lab.vary else [lab.spec]
    for answer in act.answers:
        if answer.after_lock:
            continue
        for spec in specs:
            assert option not in _squashed(answer.prompt(spec)), (answer.id, option)
