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

(a)-(c) only see wording; (e) and (f), below, see numbers: the race a lock asks about is computed here from
``course.core`` and must not stand evaluated on the page, nor be run by a question shown before the lock.
"""

from __future__ import annotations

import re
import statistics

import nbformat
import pytest

from course.notebook_api.lab_session import labs

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


# -- everything a student can read before locking (issue 48) ----------------------------------------
#
# Not only the notebook: the student docs (every page: a student reads them in any order), every other
# notebook a student has (below), Lab 05's track scenes on every track, each question shown
# before its lock (for the student with no id and 40 variants), every lock's question and options, and,
# for a later act, what the earlier acts' locks render once locked (their explanation, reveal, captions and
# the questions they show). Three checks read each lock's right option and explanation against it:
# (g) the phrases the lock declares ``banned`` (the mechanism the right option names, in the words a leak
#     would use) stand nowhere; every lock declares some;
# (h) no sentence shares four or more distinctive words (in the right option and its explanation, in no
#     other option nor the question, and not among the course's everyday words) making up a quarter of its
#     words: a sentence that restates the mechanism in its own words (issue 48's "Once an EP group spans
#     nodes, a large share of every token's k copies crosses the network") does, while setting vocabulary
#     spread over the page does not. A paraphrase in everyday words ("Each token therefore passes through
#     exactly as many MLP weights as in the dense model") escapes it: the banned phrases (g) are for those.
#     A sentence that states a needed setting and still trips it is listed in SETTING_SENTENCES with the
#     reason;
# (i) the right option's distinguishing 4-word shingles stand nowhere (a), if they hold a word beyond the course's
#     everyday vocabulary ("the gradient all-reduce" stands in every chapter; "TP=8, PP=4" must stand nowhere).
# "Everything a student can read" is every notebook of release/ and notebooks/ (the other labs, the tutorial, the
# workbook chapters, the course map, the errata page, the explorers), docs/students, the README and the words
# the instruments show (the string literals of course/instruments).

from pathlib import Path  # noqa: E402 -- below the rules it implements

ROOT = Path(__file__).resolve().parents[2]
STUDENT_DOCS = sorted((ROOT / "docs" / "students").glob("*.md"))
_STOP = set("the a an of to in on at by for and or is are be as it its this that with from than then so each every "
            "one two per into their they we our you your was were has have had not no only about up all same more "
            "less but over under once".split())


def _content(text: str) -> list:
    """The content words of ``text``: lowercased, a hyphenated word one word ("micro-batch"), stop words dropped,
    a plural's s (or es) dropped."""
    words = re.findall(r"\w+(?:-\w+)*", text.lower().replace("−", "-"))
    return [_singular(w) for w in words if w not in _STOP]


def _singular(word: str) -> str:
    """``passes`` -> ``pass``, ``nodes`` -> ``node``, ``tokens`` -> ``token``; ``process`` stays."""
    if len(word) > 4 and re.search(r"(?:[sxz]|ch|sh)es$", word):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def _sentences(text: str) -> list:
    return [x.strip() for x in re.split(r"(?<=[.!?:;])\s+|\n+", text) if x.strip()]


def _notebook_text(path) -> str:
    nb = nbformat.read(str(path), 4)
    return "\n".join(c.source for c in nb.cells)


def _instrument_words() -> str:
    """Every string an instrument can show: the literals of ``course/instruments`` (labels, captions, failure
    states, readouts' words), docstrings left out (a student reads them only through ``help``)."""
    import ast

    found = []
    for path in sorted((ROOT / "course" / "instruments").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                      and node.body and isinstance(node.body[0], ast.Expr)
                      and isinstance(node.body[0].value, ast.Constant)}
        parts = [node.value for node in ast.walk(tree)
                 if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings]
        found.append("\n".join(parts))
    return "\n".join(found)


def _everything_else() -> dict:
    """``{where: text}`` a student can open beside a lab, whatever lab or act: every release notebook (the
    other labs, the tutorial, the workbook chapters), every notebook of ``notebooks/`` (the course map, the
    errata page, the explorers), every student doc, the README, and the instruments' own words."""
    corpus = {str(p.relative_to(ROOT)): _notebook_text(p)
              for p in sorted((ROOT / "release").glob("*/*.ipynb")) + sorted((ROOT / "notebooks").glob("*.ipynb"))}
    corpus.update({f"docs/students/{p.name}": p.read_text(encoding="utf-8") for p in STUDENT_DOCS})
    corpus["README.md"] = (ROOT / "README.md").read_text(encoding="utf-8")
    corpus["course/instruments (labels and captions)"] = _instrument_words()
    return corpus


EVERYTHING_ELSE = _everything_else()


def student_corpus(lab, act_id: str) -> dict:
    """``{where: text}`` of everything a student can read before locking ``act_id`` of ``lab``."""
    corpus = {f"release/{lab.name}": "\n".join(sum(_page(lab), []))}
    corpus.update({where: text for where, text in EVERYTHING_ELSE.items()
                   if where != f"release/{lab.name}/{lab.name}.ipynb"})
    shown = []
    for act in lab.acts:
        if act.lock is not None:
            shown += [act.lock.question, *(t for k, t in act.lock.options.items() if act.id != act_id or k != act.lock.correct)]
        for answer in act.answers:
            if not (answer.after_lock and act.lock is not None):
                shown += sorted({answer.prompt(spec) for spec in [lab.spec] + [lab.spec_for(v) for v in VARIANTS]})
    corpus["questions and options"] = "\n".join(shown)
    earlier = []
    for act in lab.acts:
        if act.id == act_id:
            break
        if act.lock is not None:
            earlier += [act.lock.explanation, act.lock.reveal, *act.captions.values(),
                        *(r.prompt for r in act.reflections)]
            earlier += [answer.prompt(lab.spec) for answer in act.answers]
    corpus["earlier acts, once locked"] = "\n".join(earlier)
    if lab.prefix == "lab05":
        corpus["track scenes"] = "\n".join(" ".join(scene_text(track, a)) for track in ("Cloud", "Edge", "Mobile", "Tiny")
                                            for a in TRACK_ACTS)
    return corpus


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("−", "-").replace("\u202f", " ").replace("*", "")).lower()


@pytest.mark.parametrize("prefix,act_id", LOCKS)
def test_no_banned_phrase_stands_where_a_student_reads_before_locking(prefix, act_id):
    lab = LABS[prefix]
    lock = lab.lock_of(act_id)
    assert lock.banned, f"{prefix}/{act_id}: a lock declares the phrases that would give it away (banned=...)"
    found = [(phrase, where) for where, text in student_corpus(lab, act_id).items() for phrase in lock.banned
             if _norm(phrase) in _norm(text)]
    assert not found, f"{prefix}/{act_id}: banned phrases stand where a student reads: {found}"


#: (lock, part of a sentence) a student must read before locking although it trips (h), and why
SETTING_SENTENCES = {
    ("lab05", "act2"): {
        "of weights, gradients and Adam state": "the problem to solve (on every track): how much state there is",
        "a pipeline split across cars would leave idle": "the Edge track's scene: what the bubble chart shows",
        "the time in seconds of one ring all-reduce": "Act I's question, about Act I's data-parallel job",
        "Mixed-precision Adam keeps 16 bytes per parameter": "the errata page's bytes per parameter (every layout pays "
                                                             "them; no layout is named)",
        "shard optimizer states, gradients and weights across": "the course map's line for chapter 01 (ZeRO)",
    },
    ("lab08", "act2"): {
        "partial sums flow up a tree to rank 0": "the lab's definition of the tree, beside the ring's and recursive "
                                                 "doubling's: what each algorithm does, not what it costs",
    },
}
MIN_SHARED_WORDS, MIN_SHARED_SHARE = 4, 0.25
#: a word in more than this share of the course's sentences is the course's vocabulary, not a mechanism
COMMON_WORD = 0.01


def _common_words() -> set:
    """Words of more than COMMON_WORD of the sentences in every lab notebook and student page."""
    sentences = [set(_content(x)) for lab in LABS.values() for x in _sentences("\n".join(sum(_page(lab), [])))]
    sentences += [set(_content(x)) for where, text in EVERYTHING_ELSE.items() if not where.startswith("course/")
                  for x in _sentences(text)]
    counts: dict = {}
    for words in sentences:
        for w in words:
            counts[w] = counts.get(w, 0) + 1
    return {w for w, n in counts.items() if n > COMMON_WORD * len(sentences)}


COMMON = _common_words()


def restating_sentences(lock, text: str) -> list:
    """The sentences of ``text`` that restate the right option's mechanism: (h) above."""
    shown = set(_content(lock.question)).union(*(set(_content(t)) for k, t in lock.options.items() if k != lock.correct))
    key = {w for w in _content(lock.options[lock.correct] + " " + lock.explanation)
           if w.isalpha() and len(w) > 2} - shown - COMMON
    found = []
    for sentence in _sentences(text):
        words = {w for w in _content(sentence) if w.isalpha() and len(w) > 2}
        common = words & key
        if len(common) >= MIN_SHARED_WORDS and len(common) >= MIN_SHARED_SHARE * len(words):
            found.append((sentence, sorted(common)))
    return found


def _teaching_elsewhere(lab, where: str) -> bool:
    """Another assignment's notebook or the instruments' literals: (g) and (i) read them, (h) does not. (h)'s
    word overlap is calibrated on a lab's own page and the pages about it; over the whole course's teaching (the
    workbook derives, in its own assignment, the physics the labs ask to predict) it flags every sentence about
    Adam's state or a tree's rounds."""
    return where.startswith("course/") or (where.startswith("release/") and not where.startswith(f"release/{lab.name}"))


@pytest.mark.parametrize("prefix,act_id", LOCKS)
def test_no_sentence_a_student_reads_before_locking_restates_the_answer(prefix, act_id):
    lab = LABS[prefix]
    lock = lab.lock_of(act_id)
    allowed = SETTING_SENTENCES.get((prefix, act_id), {})
    leaks = [(where, sentence[:140], common) for where, text in student_corpus(lab, act_id).items()
             if not _teaching_elsewhere(lab, where) for sentence, common in restating_sentences(lock, text)
             if not any(part in sentence for part in allowed)]
    assert not leaks, f"{prefix}/{act_id}: sentences restate the right option: {leaks}"


#: the parts of the course's everyday hyphenated words too ("all-reduce" -> "all", "reduce"): shingles split them
COMMON_PARTS = COMMON | {part for w in COMMON for part in w.split("-")}


def _distinctive(word: str) -> bool:
    """A word that is neither a stop word nor the course's everyday vocabulary (a number is distinctive)."""
    return word not in _STOP and _singular(word) not in COMMON_PARTS


@pytest.mark.parametrize("prefix,act_id", LOCKS)
def test_the_correct_option_stands_nowhere_a_student_reads_before_locking(prefix, act_id):
    lab = LABS[prefix]
    lock = lab.lock_of(act_id)
    distinctive = {s for s in _distinguishing(lock) if any(_distinctive(w) for w in s)}
    leaks = {where: found for where, text in student_corpus(lab, act_id).items()
             if (found := distinctive & shingles(text))}
    assert not leaks, f"{prefix}/{act_id}: the right option's words stand where a student reads: {leaks}"


def test_the_checks_catch_the_leaks_of_issue_48():
    act1, act2 = LABS["lab07"].lock_of("act1"), LABS["lab07"].lock_of("act2")
    old_act1 = ("Each token therefore passes through exactly as many MLP weights as in the dense model, while the "
                "layer stores eight times as many.")
    # a paraphrase in the course's everyday words ("token", "model") escapes (h); the banned phrases catch it
    assert any(_norm(p) in _norm(old_act1) for p in act1.banned)
    assert any(_norm(p) in _norm("## Act II · The all-to-all wall") for p in act2.banned)
    old_docs = ("* **The wall is the edge of the NVLink domain.** Once an EP group spans nodes, a large share of every "
                "token's k copies crosses the network.")
    assert restating_sentences(act2, old_docs)
    assert any(_norm(p) in _norm(old_docs) for p in act2.banned)


def test_the_checks_catch_the_errata_leaks():
    """The errata page, readable from the course map, stated Lab 07's and Lab 06's answers (issue 48, gaps of
    the second session): the phrases that did must stand in its sentences of then."""
    old = {("lab07", "act1"): "### Memory follows the total parameters, not the active ones",
           ("lab07", "act2"): "Of those copies the share (1 − r/EP) whose experts sit on other nodes crosses the network",
           ("lab05", "act2"): "Its own 'correct' design for GPT-3 175B (TP=8, PP=4, DP=32) then triggers its own banner",
           ("lab06", "act1"): "## 6. Naive all-reduce is about p times slower than ring, not 14×",
           ("lab06", "act2"): "Rabenseifner and the double binary tree beat both at every size there, so the course "
                              "marks them as the winners for the 0.5 MB update."}
    for (prefix, act_id), sentence in old.items():
        assert any(_norm(p) in _norm(sentence) for p in LABS[prefix].lock_of(act_id).banned), (prefix, act_id)
    assert "notebooks/errata.ipynb" in EVERYTHING_ELSE and "notebooks/index.ipynb" in EVERYTHING_ELSE
    assert any(where.startswith("release/ch10") for where in EVERYTHING_ELSE)


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


# -- evaluated races (the Lab 06 Act II audit) ------------------------------------------------------
#
# (e) **numbers**: a lock asks the student to predict a race between its options; the numbers that
#     decide it (each option's time, memory or dollars) are computed here from ``course.core`` for the
#     lock's own scenario. Before locking, the page a student reads (every markdown and code cell, the
#     locks' questions and options, every question rendered before its lock for the student with no id
#     and for 40 variants, Lab 05's track scenes on every track) must not carry the numbers of two
#     options (one for a race with a single decisive number), in any unit a page would print them in.
# (f) **questions**: a graded question shown before its lock whose key, for the student with no id, is the
#     winning option's own number runs the lock's race: it must be declared ``after_lock``.

from course import core  # noqa: E402 -- below the rules it implements
from course.core import catalog  # noqa: E402 -- below the rules it implements
from course.notebook_api.lab_session import QUESTION_BEFORE_LOCK, REFLECTION_BEFORE_LOCK  # noqa: E402 -- below the rules it implements
from course.labs.tracks import ACTS as TRACK_ACTS, scene_text  # noqa: E402 -- below the rules it implements

VARIANTS = range(40)


def _ring(message, gpus, link, algorithm="ring"):
    link = catalog.link(link)
    return float(core.allreduce_time(message, gpus, link.bandwidth, link.latency, algorithm=algorithm))


def _plain_memory(tp, pp, dp):
    return core.plan("gpt3-175b", "h100-1024", tp=tp, pp=pp, dp=dp, micro_batch=1, num_microbatches=8).memory_total


def _lab07_plan(model, ep=1):
    """Lab 07's story: 1,024 H100s, pure data parallelism, ZeRO-1, full recomputation, 2 micro-batches of one sequence."""
    return core.plan(model, "h100-1024", tp=1, pp=1, dp=1024, micro_batch=1, num_microbatches=2, zero_stage=1,
                     recompute="full", ep=ep)


def _part3():
    s = LABS["lab05"].spec
    n = s["workers"]
    bill = core.monthly_bill(n, catalog.accelerator(s["accelerator"]).price_per_hour, s["hours_per_month"])
    mtbf = core.cluster_mtbf(s["gpu_mtbf_seconds"], n)
    return {"async": float(core.async_monthly_savings(bill, n, s["straggler_fraction"], s["slowdown"])),
            "sharded-checkpoints": float(core.sharded_checkpoint_monthly_savings(bill, s["checkpoint_seconds"], n, mtbf,
                                                                s["restart_seconds"]))}


#: Per lock: what decides it, option (or side) -> number in base units (s, bytes, dollars), for the
#: lock's own scenario. A new lock must say what its race is.
RACES = {
    # Act I: 14 GB of bf16 gradients on 128 GPUs over NDR, gathered at GPU 0 or passed round a ring
    ("lab06", "act1"): lambda: {"naive": _ring(14e9, 128, "InfiniBand NDR", "naive"),
                                "ring": _ring(14e9, 128, "InfiniBand NDR")},
    # Act II: the 0.5 MB update on 128 GPUs over NDR, one time per option
    ("lab06", "act2"): lambda: {opt: _ring(0.5e6, 128, "InfiniBand NDR", algorithm) for opt, algorithm in
                                (("ring", "ring"), ("tree", "tree"), ("rabenseifner", "rabenseifner"), ("naive", "naive"))},
    # Act I: the 7B job's gradient sum inside one node (NVLink, 8 GPUs) and across 64 (NDR, 512 GPUs)
    ("lab05", "act1"): lambda: {"one node": _ring(14e9, 8, "NVLink 4"),
                                "512 GPUs": _ring(14e9, 512, "InfiniBand NDR")},
    # Act II: memory per GPU of each layout with plain mixed-precision Adam
    ("lab05", "act2"): lambda: {"tp16-pp2": _plain_memory(16, 2, 32), "tp8-pp4": _plain_memory(8, 4, 32),
                                "tp8-pp1": _plain_memory(8, 1, 128), "tp2-pp32": _plain_memory(2, 32, 16)},
    ("lab05", "part3"): _part3,
    # Exercise 1: the memory pure data parallelism needs per GPU
    ("tutorial", "ex1"): lambda: {"out-of-memory": core.plan("llama3-70b", "research-256", tp=1, pp=1, dp=256).memory_total},
    # Lab 07 Act I: memory and step of the dense 8B and its sparse twin, both pure data parallelism
    ("lab07", "act1"): lambda: {f"{name} {what}": getattr(_lab07_plan(name), attr)
                                for name in ("llama3-8b", "llama3-8b-moe")
                                for what, attr in (("memory", "memory_total"), ("step", "step_time"))},
    # Act II: the twin's step time as EP leaves the node (8 -> 16) and beyond
    ("lab07", "act2"): lambda: {f"EP {ep}": _lab07_plan("llama3-8b-moe", ep).step_time for ep in (8, 16, 32, 64)},
    # Act III: one hot expert at twice its share on one of 64 GPUs; the share of the step spent waiting
    ("lab07", "act3"): lambda: {"expert-part": float(core.straggler_step_share(core.straggler_factor(2.0, 64, 64), 0.4))},
    # Lab 08 Act I: one 1 kB message on the story's laptop (2 us, 5 GB/s)
    ("lab08", "act1"): lambda: {"1us": float(core.point_to_point_time(1e3, 5e9, 2e-6))},
    # Act II: the four algorithms at 64 MiB on 2 ranks of the story's laptop (MPI's own as Rabenseifner)
    ("lab08", "act2"): lambda: {opt: float(core.allreduce_time(2**26, 2, 5e9, 2e-6, algorithm)) for opt, algorithm in
                                (("ring", "ring"), ("recursive-doubling", "recursive_doubling"), ("tree", "tree"),
                                  ("mpi", "rabenseifner"))},
    # Act III: chunks of 10 // 4 cover 8 of 10 elements, 2 left over
    ("lab08", "act3"): lambda: {"covered": 4.0 * (10 // 4), "left over": 10.0 - 4 * (10 // 4)},
}

_NUMBER = re.compile(r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?")


def numbers_on(text: str):
    """``(value, half a unit of its last digit)`` of every number printed in ``text``.

    >>> numbers_on("ring 1,290 µs, tree 0.21 ms")
    [(1290.0, 0.5), (0.21, 0.005)]
    """
    found = []
    for whole, decimals in _NUMBER.findall(text.replace("\u202f", "").replace("\u00a0", "")):
        digits = len(decimals) - 1 if decimals else 0
        found.append((float(whole.replace(",", "") + (decimals or "")), 0.5 * 10 ** -digits))
    return found


def printed(value: float, on_page) -> bool:
    """Whether ``value`` (base units) stands among ``on_page`` in some unit (x1000 steps, or as a percentage),
    printed to at least two significant digits."""
    scales = [10.0 ** (3 * k) for k in range(-5, 6)] + [0.01]
    for x, half_unit in on_page:
        if x == 0 or half_unit / x > 0.05:  # "2" or "0.5": too coarse to stand for a computed number
            continue
        for scale in scales:
            shown = value / scale
            if abs(x - shown) <= max(0.005 * shown, half_unit):
                return True
    return False


def before_lock_texts(lab) -> list:
    """Everything a student can read on the page before locking any of ``lab``'s locks."""
    markdown, code = _page(lab)
    texts = markdown + code + [QUESTION_BEFORE_LOCK, REFLECTION_BEFORE_LOCK]
    for act in lab.acts:
        if act.lock is not None:
            texts += [act.lock.question, *act.lock.options.values()]
        for answer in act.answers:
            if not (answer.after_lock and act.lock is not None):
                texts += {answer.prompt(spec) for spec in [lab.spec] + [lab.spec_for(v) for v in VARIANTS]}
    if lab.prefix == "lab05":
        for track in ("Cloud", "Edge", "Mobile", "Tiny"):
            for act in TRACK_ACTS:
                texts += list(scene_text(track, act)[:])
    return texts


def test_every_lock_declares_its_race():
    assert sorted(RACES) == sorted(LOCKS)


@pytest.mark.parametrize("prefix,act_id", LOCKS)
def test_the_race_of_a_lock_is_not_evaluated_on_the_page(prefix, act_id):
    lab = LABS[prefix]
    race = RACES[(prefix, act_id)]()
    on_page = numbers_on("\n".join(before_lock_texts(lab)))
    shown = sorted(side for side, value in race.items() if printed(value, on_page))
    assert len(shown) < min(2, len(race)), (
        f"{prefix}/{act_id}: the page shows the race's numbers for {shown}: {race}")


@pytest.mark.parametrize("prefix,act_id", LOCKS)
def test_a_question_before_the_lock_does_not_run_its_race(prefix, act_id):
    lab = LABS[prefix]
    act = lab.act(act_id)
    race = RACES[(prefix, act_id)]()
    winner = race.get(act.lock.correct)
    if winner is None or len(race) < 2:
        return
    for answer in act.answers:
        if answer.after_lock or answer.kind != "derive":
            continue
        key = float(answer.key(lab.spec))
        assert not printed(winner, [(key, 0.0)]), (
            f"{prefix}/{act_id}: `{answer.name}`, asked before the lock, is for the student with no id the number "
            f"of the winning option {act.lock.correct} ({key:g} {answer.unit}): working it out runs the race")


def test_the_number_check_sees_the_race_of_the_audit():
    # Lab 06 Act II as the audit found it: "Rabenseifner 90 us vs recursive doubling 105, tree 210, ring 1290 us"
    race = RACES[("lab06", "act2")]()
    on_page = numbers_on("Rabenseifner 90 us vs recursive doubling 105, tree 210, ring 1290 us")
    assert sorted(side for side, value in race.items() if printed(value, on_page)) == ["rabenseifner", "ring", "tree"]
    assert not printed(race["rabenseifner"], numbers_on("N = 128 GPUs, M = 0.5 MB, B = 50 GB/s, alpha = 5 us"))
