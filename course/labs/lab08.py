"""Lab 08 · The ring, for real, declared once (a :class:`~course.assess.lab.Lab`).

Story: every earlier lab priced collectives with the alpha-beta model and numbers from data sheets.
Here the student's own machine is the cluster: MPI ranks started from the notebook
(:mod:`course.launch`), timed honestly (medians after warm-up, spread shown, oversubscription said),
and the core's model fitted to them. Act I: your machine's alpha and beta (ping-pong and MPI's
all-reduce, 1 KiB to 64 MiB; :func:`course.core.fit_alpha_beta`). Act II: ring, recursive doubling,
a binomial tree and MPI's own Allreduce, measured beside the model with the fitted alpha and beta,
and the crossover the core predicts against the measured one. Act III: build the ring
(reduce-scatter then all-gather with ``Sendrecv``, any length, dtype and rank count) and hold its
bandwidth against the bound 2(p-1)/p · n·β.

Measured numbers differ from machine to machine and run to run, so nothing graded depends on them:
the graded questions apply the core's model to a colleague's fitted alpha and beta (the student's
own variant draws them), and the measurements are the student's to explain in the reflections.

Variants (:func:`vary`): each graded question has the student's own alpha, bandwidth, rank count and
message size; every key is a ``course.core`` call on the student's spec.
"""

from __future__ import annotations

import random
from typing import List

from course import core
from course.core.units import MB, us
from course.assess.items import Lock
from course.assess.lab import Act, Answer, Lab, Reflection, Spec
from course.assess.spec import Cell

NAME = "lab08_ring_for_real"

#: A colleague's laptop as fitted in Act I (the story; a student's variant replaces the graded inputs):
#: alpha 2 us and 5 GB/s are typical of shared-memory MPI on a laptop (MPICH ch4 shm).
SPEC: Spec = {
    "alpha": 2 * us, "bandwidth": 5e9,
    "act1_ranks": 4, "act1_bytes": 16 * MB,
    "act2_ranks": 8,
    "act3_ranks": 4, "act3_bytes": 64 * MB,
}

ALPHAS = (1 * us, 2 * us, 5 * us, 10 * us, 20 * us)
BANDWIDTHS = (2e9, 5e9, 10e9, 20e9)
RANKS = (2, 3, 4, 5, 6, 8)
POWER_RANKS = (4, 8, 16)
SIZES = (1 * MB, 4 * MB, 16 * MB, 64 * MB)


def vary(s: Spec, rng: random.Random) -> Spec:
    """A student's own colleague: alpha, bandwidth, and the ranks and sizes of each question."""
    s.update(alpha=rng.choice(ALPHAS), bandwidth=rng.choice(BANDWIDTHS), act1_ranks=rng.choice(RANKS),
             act1_bytes=rng.choice(SIZES), act2_ranks=rng.choice(POWER_RANKS), act3_ranks=rng.choice(RANKS),
             act3_bytes=rng.choice(SIZES))
    return s


def _machine(s: Spec) -> str:
    return f"α = {s['alpha'] / us:g} µs and 1/β = {s['bandwidth'] / 1e9:g} GB/s"


def act1_ring_ms(s: Spec) -> float:
    """Act I key: the core's ring all-reduce time of ``act1_bytes`` on ``act1_ranks`` ranks, ms."""
    return float(core.allreduce_time(s["act1_bytes"], s["act1_ranks"], s["bandwidth"], s["alpha"], "ring")) * 1e3


def act2_crossover_kb(s: Spec) -> float:
    """Act II key: the size where the ring overtakes recursive doubling on ``act2_ranks`` ranks, kB."""
    return float(core.crossover_message_bytes(s["act2_ranks"], s["bandwidth"], s["alpha"],
                                              "recursive_doubling", "ring")) / 1e3


def act3_bound_ms(s: Spec) -> float:
    """Act III key: the bandwidth bound 2(p-1)/p · n·β of ``act3_bytes`` on ``act3_ranks`` ranks, ms."""
    return float(core.allreduce_time(s["act3_bytes"], s["act3_ranks"], s["bandwidth"], 0.0, "ring")) * 1e3


ACT1 = Act(
    "act1", "Your machine's α and β",
    lock=Lock(
        question="Two MPI processes on this machine pass a 1 kB message through shared memory. How long does "
                 "one message take, start to finish?",
        # a scale of five, shown as four neighbours, shortest first or longest first (so the right one may sit
        # at either end); the letters of ledgers older than option ids follow the four options shown then
        options={"10ns": "about 10 nanoseconds", "1us": "about 1 microsecond", "100us": "about 100 microseconds",
                 "1ms": "about 1 millisecond", "10ms": "about 10 milliseconds"},
        correct="1us", ordered=True, shown=4, legacy=("10ns", "1us", "100us", "10ms", "1ms"),
        banned=("a few hundred nanoseconds to a few microseconds", "far above one memory access"),
        explanation="Between processes of one machine MPICH copies through shared memory: a few hundred "
                    "nanoseconds to a few microseconds per message (its latency α), far above one memory access "
                    "and far below a network round trip. On a busy machine your ranks wait for a core, and your "
                    "measured α grows: the bench says so.",
        reveal="**What the bench measures.** The fitted α is the time of a message that carries nothing, the "
               "fitted 1/β the rate of the copy through shared memory (a few GB/s to tens of GB/s: one core's "
               "memory bandwidth, shared with the other rank). Your α is the one to trust only when the fit is "
               "trusted: enough sizes, a tight spread, no more ranks than cores, a quiet machine."),
    answers=(Answer(
        "act1_model", "ring_ms", "Act I: the model's ring all-reduce time on a colleague's laptop", "milliseconds",
        lambda s: (f"**A colleague's laptop.** Their bench fitted {_machine(s)}. What does the core's ring model, "
                   f"T = 2(p−1)α + 2(p−1)/p · n·β, predict for an all-reduce of n = {s['act1_bytes'] / MB:g} MB "
                   f"on p = {s['act1_ranks']} ranks? Assign `ring_ms`, in milliseconds "
                   "(`core.allreduce_time` computes it in seconds)."),
        act1_ring_ms,
        lambda s: (f"ring_ms = core.allreduce_time({s['act1_bytes']!r}, {s['act1_ranks']}, {s['bandwidth']!r}, "
                   f"{s['alpha']!r}, 'ring') * 1e3"),
        graded="within 2 % of the model's time",
        after_lock=True),),  # the colleague's alpha would give the lock's answer away
    reflections=(Reflection(
        "act1_trust",
        "Read your bench: which failure states did it show (none is fine), and what did you change to get a fit "
        "you trust? Set *ranks* above your machine's cores, or fit only up to 16 kB: which failure appears, and "
        "why does it make α or β untrustworthy?",
        "More ranks than cores: ranks take turns on a core, so the times include waiting for the scheduler and "
        "say nothing about the copy. Too few sizes: two or three points fix a line with no honest error bar. "
        "Too noisy: other programs or a busy machine widen the spread; more repeats or a quieter machine help. "
        "A trusted fit has several sizes on both sides of the latency/bandwidth knee and small relative errors.",
        "1 point: names a failure state and why it breaks the fit. 1 point: a concrete remedy (fewer ranks, more "
        "sizes or repeats, a quieter machine)."),),
)

ACT2 = Act(
    "act2", "Ring, tree and the library",
    lock=Lock(
        question="On your machine, at 64 MiB, which of the four all-reduce algorithms will take the longest?",
        options={"ring": "the ring", "recursive-doubling": "recursive doubling", "tree": "the binomial tree",
                 "mpi": "MPI's own Allreduce"},
        correct="tree",
        banned=("the tree moves the most", "whole message up the tree", "2⌈lg p⌉·n·β"),
        explanation="A binomial tree sends the whole message up the tree and the whole sum back down: "
                    "2⌈lg p⌉·n·β of copying, against 2(p−1)/p·n·β for the ring and ⌈lg p⌉·n·β for recursive "
                    "doubling. At 64 MiB the bytes decide, and the tree moves the most.",
        reveal="**Model against measurement.** The dashed curves are the core's α-β costs with *your* fitted α "
               "and β. Where they miss, something the model leaves out is at work: the additions themselves "
               "(the γ term the model neglects), Python's time per step (a bigger effective α for the ring's "
               "2(p−1) steps), caches for small messages. The crossover card holds the measured size where the "
               "ring overtakes recursive doubling against the size the core predicts, "
               "n* = (a_ring − a_rd)·α / ((b_rd − b_ring)·β). On p = 2 the two move the same bytes, so the model "
               "says the ring never overtakes; you need p ≥ 3 (and as many cores) to see a crossover."),
    answers=(Answer(
        "act2_crossover", "crossover_kb", "Act II: the crossover of recursive doubling and ring", "kB (10³ bytes)",
        lambda s: (f"**The colleague's crossover.** With {_machine(s)}, at which message size does the ring "
                   f"overtake recursive doubling on p = {s['act2_ranks']} ranks? Assign `crossover_kb`, in kB "
                   "(`core.crossover_message_bytes` gives bytes)."),
        act2_crossover_kb,
        lambda s: (f"crossover_kb = core.crossover_message_bytes({s['act2_ranks']}, {s['bandwidth']!r}, "
                   f"{s['alpha']!r}, 'recursive_doubling', 'ring') / 1e3"),
        graded="within 2 % of the model's crossover",
        after_lock=True),),  # states the colleague's alpha, which answers Act I's lock
    reflections=(Reflection(
        "act2_model",
        "Compare your measured curves with the dashed model curves. Where do they agree, where not, and what does "
        "the model leave out that would explain the gap? Did the measured crossover land near the predicted one?",
        "Agreement at large sizes where bytes dominate (the ordering of the bandwidth factors holds); gaps at small "
        "sizes where per-step software overhead (Python, MPI matching) inflates α, especially for the ring's "
        "2(p−1) steps; the reduction's own cost (γ), cache effects and a busy or oversubscribed machine also "
        "shift the curves. The measured crossover moves with the effective α of each algorithm.",
        "1 point: a specific agreement or gap, read off the chart. 1 point: a cause the model leaves out "
        "(per-step overhead, γ, caches, load)."),),
)

ACT3 = Act(
    "act3", "Build the ring",
    lock=Lock(
        question="A ring all-reduce cuts the vector into p chunks of n // p elements each. With n = 10 elements "
                 "on p = 4 ranks, what happens?",
        options={"still-right": "the sum is still right everywhere", "last-two-lost": "the last 2 elements are never summed",
                 "mpi-error": "MPI raises an error on the sizes", "deadlock": "the ranks deadlock in Sendrecv"},
        correct="last-two-lost",
        banned=("cover 8 of the 10", "silently wrong", "never sent, so each rank", "not only multiples of p",
                "where a sum is wrong", "any length", "both receiving first", "What goes wrong when chunks",
                "your ring is wrong"),
        explanation="4 chunks of 10 // 4 = 2 elements cover 8 of the 10; the last 2 are never sent, so each rank "
                    "keeps its own values there. Nothing fails loudly: the sum is silently wrong. Chunks of "
                    "n // p or n // p + 1 elements (as numpy.array_split cuts them) cover every element.",
        reveal="**Your ring against the bound.** Each rank sends and receives 2(p−1)/p · n bytes: no all-reduce "
               "can move less (Patarasuk & Yuan 2009). The bound's line is that traffic at your fitted 1/β, "
               "with no latency at all; the share card says how close your ring came at the largest size."),
    captions={"act3_ring": (
        "Your ring must be right for any length (not only multiples of p), any dtype and any number of ranks: the "
        "race below checks it on awkward cases first (lengths 1, 5, 12 and 1001; float64, float32 and int64; 2 and "
        "3 ranks) and names the rank, case and element where a sum is wrong. A deadlock (two ranks both receiving "
        "first) ends after 20 seconds with a message that says so.")},
    answers=(Answer(
        "act3_bound", "bound_ms", "Act III: the bandwidth bound", "milliseconds",
        lambda s: (f"**The colleague's bound.** With 1/β = {s['bandwidth'] / 1e9:g} GB/s, what is the bandwidth "
                   f"bound 2(p−1)/p · n·β of an all-reduce of n = {s['act3_bytes'] / MB:g} MB on "
                   f"p = {s['act3_ranks']} ranks? Assign `bound_ms`, in milliseconds."),
        act3_bound_ms,
        lambda s: (f"bound_ms = core.allreduce_time({s['act3_bytes']!r}, {s['act3_ranks']}, {s['bandwidth']!r}, "
                   "0.0, 'ring') * 1e3"),
        graded="within 2 % of the bound"),),
    reflections=(Reflection(
        "act3_share",
        "What share of the bound did your ring reach at the largest size, and where does the rest of the time go? "
        "Name one change that would bring it closer.",
        "A Python ring reaches a fraction of the bound: each step also adds the received chunk (memory traffic the "
        "bound ignores), copies into receive buffers, and pays a per-step overhead; with p ranks on p cores the "
        "copy shares memory bandwidth. Closer: add in place into preallocated buffers, pipeline the chunks "
        "(segments), or let MPI reduce (MPI_Reduce_scatter + MPI_Allgather).",
        "1 point: reads the share and names a cost outside the bound (additions, copies, overhead). 1 point: a "
        "sound improvement."),),
)

#: each instrument of the notebook and the design-ledger entry it restores from and saves to
SAVED = {"bench": "lab08/bench", "race": "lab08/race", "ring": "lab08/ring"}

STARTER = '''def my_ring_allreduce(comm, x):
    """The sum over all ranks of the 1-D array x: a ring reduce-scatter, then a ring all-gather.

    Every rank calls it with its own x (the same length and dtype on every rank); it returns
    a new array, the same on every rank. Use comm.Get_rank(), comm.Get_size() and
    comm.Sendrecv(sendbuf, dest=..., recvbuf=..., source=...). It runs on other processes:
    import anything else you need inside the function (np is there).
    """
    p, r = comm.Get_size(), comm.Get_rank()
    out = x.copy()
    # your ring here: p - 1 reduce-scatter steps, then p - 1 all-gather steps
    raise NotImplementedError("build the ring")
'''


def layout(lab: Lab, s: Spec) -> List[Cell]:
    return [
        Cell("markdown",
             "# Lab 08 · The ring, for real\n\n"
             "Every lab so far priced collectives with the α-β model and numbers from data sheets. In this one "
             "your own machine is the cluster: the notebook starts real processes (MPI *ranks*), times them, and "
             "holds the course's model against what it measured. Act I measures your machine's latency α and "
             "bandwidth 1/β, Act II races four all-reduce algorithms, and in Act III you build the ring.\n\n"
             "**How the timing is honest.** Every size is timed several times after an untimed warm-up; the "
             "charts show the median and, as a bar, the quartiles. The instruments say when the machine was "
             "busy or had fewer cores than ranks: then the times are the scheduler's, not the machine's.\n\n"
             "**How this lab is graded.** Each prediction you lock earns a completion point (saved in "
             "`predictions.json` next to this notebook and submitted with it; being wrong costs nothing). "
             "The questions asking for a number are autograded and use a colleague's fitted numbers (yours are "
             "your own); the reflections are graded by hand. Your measurements are saved to the design ledger, "
             "so a restart shows them again without measuring.\n\n"
             "Units: kB = 10³ bytes, MB = 10⁶ bytes, KiB = 2¹⁰ and MiB = 2²⁰ bytes; GB/s = 10⁹ bytes per second."),
        Cell("setup", lab.setup_source(
            "from course import core\n"
            "from course.instruments import AlphaBetaBench, AllreduceRace\n"
            "from course.instruments.cards import stakeholder_card, HudFooter\n"
            "hud = HudFooter(prefix='lab08')"), "lab08_setup"),
        Cell("markdown",
             "## Act I · Your machine's α and β\n\n"
             "*Ping-pong*: rank 0 sends a message to rank 1, which sends it straight back; half the round trip is "
             "one message's time, t = α + n·β. Timed from 1 KiB to 64 MiB, the small messages show α and the "
             "large ones β. The bench fits both by least squares (`core.fit_alpha_beta`) and gives each an error "
             "bar; switch the operation to MPI's all-reduce to fit the same model on 2 to 8 ranks."),
        Cell("code", "stakeholder_card('Your team lead', 'Before we buy a cluster: what do collectives cost on the '\n"
                     "                 'machines we already have? Measure, then tell me what you trust.', act='Act I')",
             "lab08_act1_story"),
        Cell("markdown", "Pick an option and press **Lock**. The bench appears once your prediction is locked: "
                         "press **Measure** (a few seconds). Run All measures whatever is not measured yet, with a "
                         "progress bar; every measurement is kept, so a restart does not measure again."),
        *lab.lock_cells("act1"),
        Cell("code", "bench = lab.gate('act1', AlphaBetaBench())\n"
                     f"bench.restore({SAVED['bench']!r})\nbench.measure_if_missing()", "lab08_act1_bench"),
        Cell("markdown", "Try the failure states: set *ranks* above your machine's cores and measure the "
                         "all-reduce; fit only up to 16 KiB; press *Measure* again while something else is busy."),
        lab.reveal_cell("act1"),
        *lab.answer_cells("act1_model", s),
        *lab.reflection_cells("act1_trust"),
        Cell("markdown",
             "## Act II · Ring, tree and the library\n\n"
             "Four ways to sum a vector over p ranks, each timed on your machine:\n\n"
             "- **ring**: each rank passes one p-th of the vector to its right-hand neighbour, 2(p−1) times "
             "(first adding what it receives, then only copying it);\n"
             "- **recursive doubling**: ranks 1, 2, 4, … apart swap their whole vectors and add, ⌈lg p⌉ rounds;\n"
             "- **binomial tree**: partial sums flow up a tree to rank 0, then the total flows back down;\n"
             "- **MPI's own Allreduce**: the library picks (MPICH switches algorithms by message size).\n\n"
             "The first three are written in Python with mpi4py (`course.launch.bench`); the library's is C."),
        *lab.lock_cells("act2"),
        Cell("code", "race = lab.gate('act2', AllreduceRace(model=bench))\n"
                     f"race.restore({SAVED['race']!r})\nrace.measure_if_missing()", "lab08_act2_race"),
        lab.reveal_cell("act2"),
        *lab.answer_cells("act2_crossover", s),
        *lab.reflection_cells("act2_model"),
        Cell("markdown",
             "## Act III · Build the ring\n\n"
             "Write `my_ring_allreduce(comm, x)` below: a reduce-scatter (p − 1 steps: send one chunk to the "
             "right, receive one from the left, add it), then an all-gather (p − 1 steps: pass the finished "
             "chunks on), each step one `comm.Sendrecv`."),
        *lab.lock_cells("act3"),
        lab.caption_cell("act3_ring"),
        Cell("code", STARTER),
        Cell("code", "ring = lab.gate('act3', AllreduceRace(model=bench, algorithms=('ring', 'library'), "
                     "show_bound=True))\n"
                     f"ring.restore({SAVED['ring']!r})\nring.use(my_ring_allreduce)\nring.measure_if_missing()",
             "lab08_act3_ring"),
        lab.reveal_cell("act3"),
        *lab.answer_cells("act3_bound", s),
        *lab.reflection_cells("act3_share"),
        Cell("markdown", "## Ledger and HUD\n\nSave the three instruments (with their measurements and the failure "
                         "states they showed) to the design ledger; the HUD sums up this lab's entries."),
        Cell("code", "".join(f"{name}.record()\n" for name in SAVED) + "hud.refresh()\nhud", "lab08_hud"),
    ]


ACTIVITY = LAB = Lab(NAME, "lab08", "Lab 08 · The ring, for real", SPEC, (ACT1, ACT2, ACT3), layout, vary)
