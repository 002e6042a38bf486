"""Chapter 11: collectives by hand (exercises 11.1-11.7).

The student writes reduce-scatter, all-gather and recursive halving-doubling from point-to-point
exchanges, fixes a ring with a wrong chunk index, traces the ring's chunks and prices each algorithm.
Costs come from :func:`course.core.allreduce_time` and :func:`course.core.allreduce_coefficients`
(alpha-beta model of Thakur, Rabenseifner & Gropp 2005). The collectives are graded on real MPI ranks
(:mod:`course.assess.ranks`); each reference result is plain NumPy arithmetic on every rank's input.
"""

from __future__ import annotations

import math

import numpy as np

from course import core
from course.core.units import MB, us

from course.assess.activity import Chapter
from course.assess.authoring import build_exercise, debug_exercise, exact, rounded, values_exercise
from course.assess.ranks import encode, rank_probes

CHAPTER = {
    "title": "Chapter 11 \u00b7 Collectives by hand",
    "intro": (
        "Chapters 0 and 4 priced collectives with a formula. Here you build them from the only operation "
        "a network really offers: one rank sends a buffer, another receives it. Your functions run on "
        "several processes at once; each process is a *rank* and calls your function with its own data.\n\n"
        "Every function takes `comm` first. It speaks mpi4py's language: `comm.Get_rank()` and "
        "`comm.Get_size()` (or `comm.rank`, `comm.size`), and "
        "`got = comm.sendrecv(obj, dest=right, source=left)`, which sends `obj` to rank `right` and returns "
        "what rank `left` sent you, in one step that cannot deadlock. `comm.send`/`comm.recv` also exist; "
        "`send` waits until the receiver has taken the message, as a synchronous send does.\n\n"
        "The check cells run your function on **simulated ranks** (threads of this kernel): they are quick, "
        "repeatable and find a deadlock at once. Grading runs it on **real MPI processes**, 4 of them, "
        "in the grader's sandbox. Only the imports, functions, classes and plain assignments of your notebook "
        "are run there, so keep test calls in cells of their own."
    ),
    "concept": [
        "## Concepts\n\n"
        "**Chunks.** A vector of n numbers is cut into p chunks the way `np.array_split(x, p)` does: the "
        "first n mod p chunks hold one element more. Chunk c of the result is the element-wise sum of "
        "chunk c of every rank's vector.\n\n"
        "**Ring reduce-scatter** (p\u22121 steps). Rank r sends to r+1 and receives from r\u22121 (mod p). In "
        "step s (s = 1 \u2026 p\u22121) rank r sends chunk (r\u2212s) mod p, which it has added up so far, and "
        "adds what arrives into chunk (r\u2212s\u22121) mod p. After p\u22121 steps rank r holds the complete sum "
        "of chunk r. **Ring all-gather** (p\u22121 steps) passes finished chunks on around the ring until "
        "every rank has all of them. A ring all-reduce is one followed by the other: each rank sends "
        "2(p\u22121)/p of the vector, the least any all-reduce can.\n\n"
        "**Recursive halving-doubling** (Rabenseifner; p a power of two). Reduce-scatter in lg p rounds: in "
        "round k rank r exchanges with partner r XOR (p/2\u1d4f), keeps the half of its current block that "
        "holds its own chunks, sends the other half, and adds what it receives. Then all-gather by recursive "
        "doubling, the same partners in reverse order, swapping the blocks each holds. Only 2 lg p steps, "
        "and still 2(p\u22121)/p of the vector sent.\n\n"
        "**Cost (\u03b1-\u03b2 model).** A message of m bytes costs \u03b1 + m\u03b2 (\u03b1 latency in s, \u03b2 in s "
        "per byte, 1/\u03b2 the bandwidth). For an all-reduce of n bytes on p ranks:\n\n"
        "| algorithm | time |\n|---|---|\n"
        "| ring | 2(p\u22121)\u03b1 + 2(p\u22121)/p \u00b7 n\u03b2 |\n"
        "| recursive halving-doubling | 2 lg p \u00b7 \u03b1 + 2(p\u22121)/p \u00b7 n\u03b2 |\n"
        "| recursive doubling | lg p \u00b7 (\u03b1 + n\u03b2) |\n"
        "| binomial tree (reduce, then broadcast) | 2 lg p \u00b7 (\u03b1 + n\u03b2) |\n\n"
        "Source: Thakur, Rabenseifner & Gropp, *Optimization of Collective Communication Operations in "
        "MPICH*, IJHPCA 19(1), 2005. Lab 08 measures \u03b1 and \u03b2 on your own machine.",
    ],
}

#: this chapter as one activity (listed in :mod:`course.activities`); the exercises below add to it
ACTIVITY = CH = Chapter("ch11", "ch11_collectives_by_hand", **CHAPTER)


# -- the collectives the grader compares with (plain NumPy on every rank's input) --------------------

def _inputs(args, position=0):
    return [np.asarray(rank_args[position]) for rank_args in args]


def _same_lengths(xs):
    if len({x.shape for x in xs}) != 1 or xs[0].ndim != 1:
        raise ValueError("every rank must hold a 1-D vector of the same length")


def _total(xs):
    total = xs[0].copy()
    for x in xs[1:]:
        total = total + x
    return total


def reduce_scatter_reference(p, args):
    """Rank r's result: chunk r (``np.array_split``) of the sum of every rank's vector."""
    xs = _inputs(args)
    _same_lengths(xs)
    return np.array_split(_total(xs), p)


def all_gather_reference(p, args):
    """Every rank's result: the chunks of every rank, in rank order, concatenated."""
    chunks = _inputs(args)
    return [np.concatenate(chunks) for _ in range(p)]


def allreduce_reference(p, args):
    """Every rank's result: the sum of every rank's vector."""
    xs = _inputs(args)
    _same_lengths(xs)
    return [_total(xs) for _ in range(p)]


def rhd_reference(p, args):
    """The sum on every rank; ``ValueError`` when p is not a power of two."""
    if p < 1 or p & (p - 1):
        raise ValueError("recursive halving-doubling needs a power-of-two number of ranks")
    return allreduce_reference(p, args)


def ring_allreduce_correct(comm, x):
    """A correct ring all-reduce in the shape of 11.6's listing (its trace is the one compared with)."""
    p, r = comm.Get_size(), comm.Get_rank()
    chunks = [c.copy() for c in np.array_split(x, p)]
    right, left = (r + 1) % p, (r - 1) % p
    for step in range(p - 1):
        send, recv = (r - step) % p, (r - step - 1) % p
        chunks[recv] = chunks[recv] + comm.sendrecv(chunks[send], dest=right, source=left)
    for step in range(p - 1):
        out, into = (r + 1 - step) % p, (r - step) % p
        chunks[into] = comm.sendrecv(chunks[out], dest=right, source=left)
    return np.concatenate(chunks)


def _ring_step(p, step):
    return (f"reduce-scatter step {step}" if step <= p - 1 else
            f"all-gather step {step - (p - 1)}" if step <= 2 * (p - 1) else "after the all-gather")


# -- probes ---------------------------------------------------------------------------------------

DTYPES = ("float64", "float32", "int64")


def _vectors(rng, p, n, dtype):
    if dtype == "int64":
        return [np.array([rng.randint(-1000, 1000) for _ in range(n)], dtype=dtype) for _ in range(p)]
    return [np.array([round(rng.uniform(-100, 100), 3) for _ in range(n)], dtype=dtype) for _ in range(p)]


def _vector_probe(p, n, dtype, seed, group, label=""):
    import random

    rng = random.Random(f"{seed}:{p}:{n}:{dtype}")
    probe = {"p": p, "group": group, "args": [[encode(x)] for x in _vectors(rng, p, n, dtype)]}
    return dict(probe, label=label) if label else probe


def _chunk_probe(p, n, dtype, seed, group, label=""):
    import random

    rng = random.Random(f"chunks:{seed}:{p}:{n}:{dtype}")
    total = _vectors(rng, 1, n, dtype)[0]
    probe = {"p": p, "group": group, "args": [[encode(c), n] for c in np.array_split(total, p)]}
    return dict(probe, label=label) if label else probe


def _random_vector(rng):
    p = rng.choice([2, 3, 4])
    return _vector_probe(p, rng.randint(p, 40), rng.choice(DTYPES), rng.random(), "random inputs")


def _random_pow2(rng):
    return _vector_probe(rng.choice([2, 4]), rng.randint(4, 40), rng.choice(DTYPES), rng.random(), "random inputs")


def _random_chunks(rng):
    p = rng.choice([2, 3, 4])
    return _chunk_probe(p, rng.randint(p, 40), rng.choice(DTYPES), rng.random(), "random inputs")


def _vector_example(s):
    p, n, dtype = s["example"]
    return _vector_probe(p, n, dtype, "example", "worked example", f"your worked example: {p} ranks, {n} numbers")


def _chunk_example(s):
    p, n, dtype = s["example"]
    return _chunk_probe(p, n, dtype, "example", "worked example", f"your worked example: {p} ranks, {n} numbers")


def _shown(value):
    return np.array2string(np.asarray(value), separator=", ", max_line_width=10**6)


def _example_text(s, probe_of, reference, what):
    """The worked example of a prompt: each rank's input and the result it returns."""
    probe = probe_of(s)
    args = [[np.array(a["array"], dtype=a["dtype"]) if type(a) is dict else a for a in rank] for rank in probe["args"]]
    results = reference(probe["p"], args)
    rows = "\n".join(f"* rank {r}: `{what}({', '.join(['comm'] + [_shown(a) for a in args[r]])})` returns "
                      f"`{_shown(results[r])}`" for r in range(probe["p"]))
    return (f"Worked example ({probe['p']} ranks, dtype {s['example'][2]}; the check cell runs it):\n\n{rows}")


def _vary_example(powers_of_two=False):
    def vary(s, rng):
        p = rng.choice([2, 4]) if powers_of_two else rng.choice([2, 3, 4])
        return dict(s, example=[p, rng.randint(p + 1, 9), rng.choice(list(DTYPES))])
    return vary


# 11.1 ---------------------------------------------------------------------------
def _held(s):
    p, k, r = s["p"], s["k"], s["rank"]
    return {"chunk": (r - k - 1) % p, "contributions": k + 1}


values_exercise(
    CH, "11.1", "Which chunk, after step k", kind="Trace",
    spec={"p": 6, "k": 2, "rank": 1},
    vary=lambda s, rng: (lambda p: dict(s, p=p, k=rng.randint(1, p - 1), rank=rng.randrange(p)))(
        rng.choice([5, 6, 7, 8, 9, 12, 16])),
    prompt=lambda s: (
        f"A ring reduce-scatter runs on p = {s['p']} ranks as in the concepts above (rank r sends chunk "
        f"(r\u2212s) mod p to rank r+1 in step s and adds what arrives into chunk (r\u2212s\u22121) mod p). "
        f"Just after step k = {s['k']}, into which chunk has rank {s['rank']} just added what it received, "
        "and how many ranks' contributions does that chunk now hold there (its own included)?"),
    answers={"chunk": "a chunk index from 0 to p\u22121", "contributions": "a count of ranks"},
    key=_held, rtol=0.0,
    solution=lambda s: (f"chunk = ({s['rank']} - {s['k']} - 1) % {s['p']}\n"
                        f"contributions = {s['k']} + 1"),
    derivation=lambda s: (
        f"In step {s['k']} rank {s['rank']} adds into chunk ({s['rank']} \u2212 {s['k']} \u2212 1) mod {s['p']} = "
        f"**{_held(s)['chunk']}**. That chunk started at rank {(s['rank'] - s['k']) % s['p']} and travelled "
        f"{s['k']} hops, picking up one contribution per rank it passed, so it now holds "
        f"**{_held(s)['contributions']}** of the {s['p']}. After step p\u22121 = {s['p'] - 1} it holds all of "
        f"them, which is why rank r ends with chunk r."),
)


# 11.2 ---------------------------------------------------------------------------
_ALGORITHMS = {"ring_us": "ring", "rhd_us": "rabenseifner", "doubling_us": "recursive_doubling",
               "tree_us": "tree"}


def _times(s):
    bandwidth = 1.0 / (s["beta_ns_per_byte"] * 1e-9)
    return {name: float(core.allreduce_time(s["message_mb"] * MB, s["p"], bandwidth, s["alpha_us"] * us,
                                            algorithm=algo)) / us
            for name, algo in _ALGORITHMS.items()}


def _coeffs(s, algo):
    return core.allreduce_coefficients(s["p"], algorithm=algo)


values_exercise(
    CH, "11.2", "Price each algorithm", kind="Derive",
    spec={"p": 16, "message_mb": 4.0, "alpha_us": 5.0, "beta_ns_per_byte": 0.1},
    vary=lambda s, rng: dict(s, p=rng.choice([8, 16, 32, 64]), message_mb=float(rng.choice([0.25, 1, 4, 16, 64])),
                             alpha_us=float(rng.choice([2, 5, 10, 20])),
                             beta_ns_per_byte=float(rng.choice([0.04, 0.1, 0.2, 0.5]))),
    prompt=lambda s: (
        f"An all-reduce of n = {exact(s['message_mb'])} MB (1 MB = 10\u2076 bytes) runs on p = {s['p']} ranks with "
        f"\u03b1 = {exact(s['alpha_us'])} \u00b5s and \u03b2 = {exact(s['beta_ns_per_byte'])} ns per byte. What does each "
        "algorithm of the table above take, in microseconds?"),
    answers={"ring_us": "\u00b5s", "rhd_us": "\u00b5s (recursive halving-doubling)",
             "doubling_us": "\u00b5s (recursive doubling)", "tree_us": "\u00b5s (binomial tree)"},
    key=_times,
    solution=lambda s: "\n".join([
        f"alpha, beta, n, p = {s['alpha_us']!r}, {s['beta_ns_per_byte']!r} * 1e-3, {s['message_mb']!r} * 1e6, {s['p']}",
        "import math",
        "lg = math.ceil(math.log2(p))",
        "ring_us = 2 * (p - 1) * alpha + 2 * (p - 1) / p * n * beta",
        "rhd_us = 2 * lg * alpha + 2 * (p - 1) / p * n * beta",
        "doubling_us = lg * (alpha + n * beta)",
        "tree_us = 2 * lg * (alpha + n * beta)"]),
    derivation=lambda s: (
        "With n\u03b2 = " f"{rounded(s['message_mb'] * 1e6 * s['beta_ns_per_byte'] * 1e-3, 6)} \u00b5s: "
        + "; ".join(f"{label} = {rounded(_coeffs(s, algo)[0], 4)}\u03b1 + {rounded(_coeffs(s, algo)[1], 4)}\u00b7n\u03b2 = "
                    f"**{rounded(_times(s)[name], 5)} \u00b5s**"
                    for name, algo, label in (("ring_us", "ring", "ring"), ("rhd_us", "rabenseifner", "halving-doubling"),
                                              ("doubling_us", "recursive_doubling", "recursive doubling"),
                                              ("tree_us", "tree", "tree")))
        + ". Halving-doubling keeps the ring's bandwidth term with only 2 lg p latencies; recursive doubling "
          "and the tree send the whole vector every round, so they only win when \u03b1 dominates."),
)


# 11.3 ---------------------------------------------------------------------------
build_exercise(
    CH, "11.3", "Ring reduce-scatter", spec={"example": [4, 6, "float64"]}, vary=_vary_example(),
    prompt=lambda s: (
        "Write `reduce_scatter(comm, x)`: every rank passes its own 1-D NumPy vector `x` (the same length on "
        "every rank); rank r returns chunk r (as `np.array_split(total, p)[r]`) of the element-wise sum of "
        "all ranks' vectors, with the dtype of `x`. Use the ring: p\u22121 steps of `comm.sendrecv`, one "
        "chunk per step, to the right neighbour and from the left one.\n\n"
        "* Any length (also one that p does not divide), any dtype (float64, float32, int64), any number of "
        "ranks (1 too: then the result is x itself).\n"
        "* Do not gather the whole vector anywhere: each step moves one chunk.\n\n"
        + _example_text(s, _vector_example, reduce_scatter_reference, "reduce_scatter")),
    function="reduce_scatter", signature="(comm, x)",
    docstring="Ring reduce-scatter: rank r returns chunk r of the sum over ranks.",
    body=("import numpy as np\n"
          "p, r = comm.Get_size(), comm.Get_rank()\n"
          "chunks = [c.copy() for c in np.array_split(np.asarray(x), p)]\n"
          "for step in range(1, p):\n"
          "    send, into = (r - step) % p, (r - step - 1) % p\n"
          "    got = comm.sendrecv(chunks[send], dest=(r + 1) % p, source=(r - 1) % p)\n"
          "    chunks[into] = chunks[into] + got\n"
          "return chunks[r]"),
    reference=reduce_scatter_reference,
    probes=rank_probes(
        fixed=[_vector_probe(3, 7, "int64", "edge", "edge cases"), _vector_probe(4, 3, "float64", "edge", "edge cases"),
                             _vector_probe(1, 5, "float32", "edge", "edge cases"),
                             _vector_probe(4, 13, "float32", "edge", "edge cases")],
        random_probe=_random_vector, count=4),
    examples=[],
    ranks={"trace_reference": None, "describe_step": lambda p, step: f"reduce-scatter step {step}",
           "example_of": _vector_example},
    derivation=lambda s: (
        "Cut x into p chunks; in step s send chunk (r\u2212s) mod p to the right and add what comes from the "
        "left into chunk (r\u2212s\u22121) mod p. The chunk a rank adds into in step s is the one it sends in step "
        "s+1, so each partial sum travels once around the ring and ends at rank r as chunk r after p\u22121 "
        "steps. Adding arrays of the input's dtype keeps that dtype; `np.array_split` handles lengths p does "
        "not divide (chunks differ by at most one element)."),
)


# 11.4 ---------------------------------------------------------------------------
build_exercise(
    CH, "11.4", "Ring all-gather", spec={"example": [4, 10, "float64"]}, vary=_vary_example(),
    prompt=lambda s: (
        "Write `all_gather(comm, chunk, n)`: rank r passes its own chunk (chunk r of a vector of n numbers, "
        "cut as `np.array_split` cuts it) and every rank returns the whole vector: all chunks in rank "
        "order, concatenated, with the chunks' dtype. Use the ring: p\u22121 steps of `comm.sendrecv`, each "
        "passing on the chunk that arrived in the step before.\n\n"
        + _example_text(s, _chunk_example, all_gather_reference, "all_gather")),
    function="all_gather", signature="(comm, chunk, n)",
    docstring="Ring all-gather: every rank returns all p chunks in rank order.",
    body=("import numpy as np\n"
          "p, r = comm.Get_size(), comm.Get_rank()\n"
          "chunks = [None] * p\n"
          "chunks[r] = np.asarray(chunk)\n"
          "for step in range(p - 1):\n"
          "    send, into = (r - step) % p, (r - step - 1) % p\n"
          "    chunks[into] = comm.sendrecv(chunks[send], dest=(r + 1) % p, source=(r - 1) % p)\n"
          "return np.concatenate(chunks)"),
    reference=all_gather_reference,
    probes=rank_probes(
        fixed=[_chunk_probe(4, 6, "int64", "edge", "edge cases"),
                             _chunk_probe(1, 4, "float64", "edge", "edge cases"),
                             _chunk_probe(3, 11, "float32", "edge", "edge cases")],
        random_probe=_random_chunks, count=4),
    examples=[],
    ranks={"trace_reference": None, "describe_step": lambda p, step: f"all-gather step {step}",
           "example_of": _chunk_example},
    derivation=lambda s: (
        "Start with your own chunk at position r. In step s (from 0) send the chunk at position (r\u2212s) mod p "
        "(your own first, then the one that just arrived) and store what comes from the left at (r\u2212s\u22121) "
        "mod p. After p\u22121 steps every position is filled; `np.concatenate` keeps the chunks' dtype and "
        "their uneven lengths."),
)


# 11.5 ---------------------------------------------------------------------------
build_exercise(
    CH, "11.5", "Recursive halving-doubling", spec={"example": [4, 8, "float64"]}, vary=_vary_example(True),
    prompt=lambda s: (
        "Write `allreduce_rhd(comm, x)`: the all-reduce of Rabenseifner's algorithm. Every rank passes its "
        "own 1-D vector `x` and returns the element-wise sum over all ranks, with the dtype of `x`.\n\n"
        "* Reduce-scatter by recursive halving: lg p rounds; in each, exchange half of your current block "
        "with partner `r ^ distance` (distance p/2, p/4, \u2026, 1) and add the half you keep.\n"
        "* All-gather by recursive doubling: the same partners in reverse order, exchanging the blocks "
        "you hold.\n"
        "* p must be a power of two (1, 2, 4, \u2026): raise `ValueError` on every rank otherwise. Any "
        "length, also one that p does not divide (split with `np.array_split` into p chunks and move "
        "whole chunks).\n\n" + _example_text(s, _vector_example, rhd_reference, "allreduce_rhd")),
    function="allreduce_rhd", signature="(comm, x)",
    docstring="Recursive halving (reduce-scatter) then recursive doubling (all-gather).",
    body=("import numpy as np\n"
          "p, r = comm.Get_size(), comm.Get_rank()\n"
          "if p < 1 or p & (p - 1):\n"
          "    raise ValueError('p must be a power of two')\n"
          "chunks = [c.copy() for c in np.array_split(np.asarray(x), p)]\n"
          "lo, hi = 0, p                      # the chunks this rank is still responsible for\n"
          "distance = p // 2\n"
          "while distance >= 1:               # recursive halving\n"
          "    partner = r ^ distance\n"
          "    mid = (lo + hi) // 2\n"
          "    keep, give = ((lo, mid), (mid, hi)) if r < partner else ((mid, hi), (lo, mid))\n"
          "    got = comm.sendrecv(chunks[give[0]:give[1]], dest=partner, source=partner)\n"
          "    for i, c in zip(range(*keep), got):\n"
          "        chunks[i] = chunks[i] + c\n"
          "    lo, hi = keep\n"
          "    distance //= 2\n"
          "distance = 1\n"
          "while distance < p:                # recursive doubling\n"
          "    partner = r ^ distance\n"
          "    got = comm.sendrecv((lo, chunks[lo:hi]), dest=partner, source=partner)\n"
          "    start, blocks = got\n"
          "    chunks[start:start + len(blocks)] = blocks\n"
          "    lo, hi = min(lo, start), max(hi, start + len(blocks))\n"
          "    distance *= 2\n"
          "return np.concatenate(chunks)"),
    reference=rhd_reference,
    probes=rank_probes(
        fixed=[_vector_probe(2, 5, "int64", "edge", "edge cases"),
                              _vector_probe(4, 7, "float32", "edge", "edge cases"),
                              _vector_probe(1, 3, "float64", "edge", "edge cases")],
        random_probe=_random_pow2, count=4,
        invalid=[_vector_probe(3, 6, "float64", "invalid", "invalid inputs")]),
    # the visible check also tries a rank count that is not a power of two: the prompt asks for ValueError there
    examples=[_vector_probe(3, 5, "float64", "visible", "worked example", "p = 3, not a power of two")],
    ranks={"trace_reference": None, "describe_step": None, "example_of": _vector_example},
    derivation=lambda s: (
        "Halving: with distance d the pair (r, r\u2009XOR\u2009d) splits the block both are responsible for; "
        "the lower rank keeps the lower half. Each keeps its half, sends the other, and adds what it "
        "receives, so after lg p rounds each rank holds the full sum of one chunk (p/2 + p/4 + \u2026 + 1 = "
        "p\u22121 chunks sent in all). Doubling retraces the partners from d = 1 up, swapping whole blocks, "
        "until every rank has all p chunks: 2 lg p steps, 2(p\u22121)/p of the vector sent."),
)


# 11.6 ---------------------------------------------------------------------------
LISTING_116 = '''
?a|import numpy as np
?a|
?e|def right_of(r, p):
?e|    """The rank that rank r sends to."""
?e|    return (r + 1) % p
?e|
?f|def left_of(r, p):
?f|    """The rank that rank r receives from."""
?f|    return (r - 1) % p
?f|
?g|DTYPES = ("float64", "float32", "int64")   # what the grader sends
?g|
def ring_allreduce(comm, x):
?b|    """Sum of every rank's vector x, on every rank: reduce-scatter, then all-gather."""
    p, r = comm.Get_size(), comm.Get_rank()
?h|    # p chunks, cut as np.array_split cuts them (the first n % p one element longer)
    chunks = [c.copy() for c in np.array_split(x, p)]
    right, left = (r + 1) % p, (r - 1) % p
?c|    # reduce-scatter: after it, rank r holds the whole sum of chunk (r + 1) % p
    for step in range(p - 1):
?i|        # send the partial sum of one chunk, add the one arriving from the left
        send, recv = (r - step) % p, (r - step - 1) % p
        got = comm.sendrecv(chunks[send], dest=right, source=left)
        chunks[recv] = chunks[recv] + got
?d|    # all-gather: pass each finished chunk on around the ring
    for step in range(p - 1):
?j|        # the chunk to pass on, and where the one from the left goes
        out = (r - step) % p
        into = (r - step) % p
        chunks[into] = comm.sendrecv(chunks[out], dest=right, source=left)
    return np.concatenate(chunks)
'''

DEBUG_EXAMPLES = [_vector_probe(4, 8, "float64", "example", "worked example", "4 ranks, 8 numbers")]

debug_exercise(
    CH, "11.6", "The ring with a wrong chunk", spec={},
    prompt=lambda s: (
        "This ring all-reduce returns wrong sums. Each rank passes "
        "its own vector x; every rank should return the element-wise sum over all ranks. One line picks the "
        "wrong chunk. Run it in the check cell to see where the data first go wrong, then fix it."),
    buggy_source=LISTING_116, buggy_line=10,
    function="ring_allreduce", signature="(comm, x)",
    docstring="Ring all-reduce: reduce-scatter, then all-gather; every rank returns the sum.",
    body=("import numpy as np\n"
          "p, r = comm.Get_size(), comm.Get_rank()\n"
          "chunks = [c.copy() for c in np.array_split(np.asarray(x), p)]\n"
          "right, left = (r + 1) % p, (r - 1) % p\n"
          "for step in range(p - 1):\n"
          "    send, recv = (r - step) % p, (r - step - 1) % p\n"
          "    got = comm.sendrecv(chunks[send], dest=right, source=left)\n"
          "    chunks[recv] = chunks[recv] + got\n"
          "for step in range(p - 1):\n"
          "    out = (r + 1 - step) % p\n"
          "    into = (r - step) % p\n"
          "    chunks[into] = comm.sendrecv(chunks[out], dest=right, source=left)\n"
          "return np.concatenate(chunks)"),
    reference=allreduce_reference,
    probes=rank_probes(
        fixed=DEBUG_EXAMPLES + [_vector_probe(3, 7, "int64", "edge", "edge cases"),
                                _vector_probe(4, 5, "float32", "edge", "edge cases")],
        random_probe=_random_vector, count=4),
    examples=DEBUG_EXAMPLES,
    ranks={"trace_reference": ring_allreduce_correct, "describe_step": _ring_step},
    derivation=lambda s: (
        f"Line **{s['buggy_line']}** (`out = (r - step) % p`) is the bug. After the reduce-scatter rank r holds "
        "the finished chunk (r+1) mod p, so the all-gather must start by sending that one: "
        "`out = (r + 1 - step) % p`. The buggy line sends chunk r, which at that point holds only a partial "
        "sum: the data first diverge in the first all-gather step, on every rank."),
)


# 11.7 ---------------------------------------------------------------------------
def _bucket(s):
    latency_count, bandwidth_factor = core.allreduce_coefficients(s["p"], algorithm="ring")
    alpha, beta = s["alpha_us"] * us, 1.0 / (s["bandwidth_gbs"] * 1e9)
    share = s["latency_pct"] / 100.0
    # latency share a*alpha / (a*alpha + b*m*beta) <= share  <=>  m >= a*alpha*(1-share) / (share*b*beta)
    smallest = latency_count * alpha * (1.0 - share) / (share * bandwidth_factor * beta)
    buckets = max(1, math.floor(s["gradient_mb"] * MB / smallest))
    size = s["gradient_mb"] * MB / buckets
    each = float(core.allreduce_time(size, s["p"], 1.0 / beta, alpha, algorithm="ring"))
    return {"bucket_mb": smallest / MB, "buckets": buckets, "total_ms": buckets * each * 1e3}


values_exercise(
    CH, "11.7", "Gradient buckets from your \u03b1 and \u03b2", kind="Design",
    spec={"p": 8, "alpha_us": 20.0, "bandwidth_gbs": 10.0, "latency_pct": 10.0, "gradient_mb": 1400.0},
    vary=lambda s, rng: dict(s, p=rng.choice([4, 8, 16, 32]), alpha_us=float(rng.choice([5, 10, 20, 40, 80])),
                             bandwidth_gbs=float(rng.choice([1, 2.5, 5, 10, 25])),
                             latency_pct=float(rng.choice([5, 10, 20])),
                             gradient_mb=float(rng.choice([440, 1400, 2600, 7000]))),
    prompt=lambda s: (
        "Data-parallel training all-reduces the gradients in *buckets* while the backward pass goes on (as "
        "PyTorch DDP's `bucket_cap_mb` does). A small bucket pays the ring's 2(p\u22121) latencies for little "
        "data; a large one starts late. Design the buckets for "
        f"p = {s['p']} ranks on a machine with \u03b1 = {exact(s['alpha_us'])} \u00b5s and a bandwidth 1/\u03b2 = "
        f"{exact(s['bandwidth_gbs'])} GB/s (your Lab 08 fit, if you have one, gives numbers like these: try "
        f"yours too), for {exact(s['gradient_mb'])} MB of gradients (1 MB = 10\u2076 bytes):\n\n"
        f"1. `bucket_mb`: the smallest bucket whose ring all-reduce spends at most {exact(s['latency_pct'])} % of "
        "its time on latency;\n"
        "2. `buckets`: how many equal buckets of at least that size the gradients fill (a whole number: "
        "round down, so each bucket is at least `bucket_mb`);\n"
        "3. `total_ms`: the all-reduce time of all the buckets, one after the other, in ms."),
    answers={"bucket_mb": "MB", "buckets": "a whole number", "total_ms": "ms"},
    key=_bucket, tolerances={"buckets": 0.0},
    solution=lambda s: "\n".join([
        f"p, alpha, beta, share = {s['p']}, {s['alpha_us']!r} * 1e-6, 1 / ({s['bandwidth_gbs']!r} * 1e9), {s['latency_pct']!r} / 100",
        "a, b = 2 * (p - 1), 2 * (p - 1) / p       # ring: a*alpha + b*m*beta",
        "bucket_mb = a * alpha * (1 - share) / (share * b * beta) / 1e6",
        "import math",
        f"buckets = max(1, math.floor({s['gradient_mb']!r} / bucket_mb))",
        f"size = {s['gradient_mb']!r} * 1e6 / buckets",
        "total_ms = buckets * (a * alpha + b * size * beta) * 1e3"]),
    derivation=lambda s: (
        f"The latency share of one bucket of m bytes is a\u03b1 / (a\u03b1 + b\u00b7m\u03b2) with a = 2(p\u22121) = "
        f"{2 * (s['p'] - 1)} and b = 2(p\u22121)/p; it is at most {exact(s['latency_pct'])} % when m \u2265 "
        f"a\u03b1(1\u2212s)/(s\u00b7b\u03b2) = **{rounded(_bucket(s)['bucket_mb'], 4)} MB**. {exact(s['gradient_mb'])} MB fill "
        f"**{_bucket(s)['buckets']}** such buckets, and all of them take **{rounded(_bucket(s)['total_ms'], 4)} ms** "
        "(the bandwidth term is the same for any bucketing; each extra bucket adds a\u03b1)."),
)
