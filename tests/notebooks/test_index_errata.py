"""The course map (notebooks/index.ipynb) and the errata page (notebooks/errata.ipynb)."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = REPO / "notebooks"
ASSIGNMENTS = [
    "lab05_parallelism_paradox", "lab06_bandwidth_invariant", "tutorial_3d_parallelism", "lab07_expert_wall",
    "lab08_ring_for_real",
    "ch00_ring_allreduce", "ch01_zero", "ch02_gradient_accumulation", "ch03_lr_scaling",
    "ch04_comm_overhead", "ch05_pipeline", "ch06_tensor_parallel", "ch07_checkpointing",
    "ch08_mixed_precision", "ch09_capstone", "ch10_mixture_of_experts", "ch11_collectives_by_hand",
]


def read(name):
    return nbformat.read(NOTEBOOKS / name, as_version=4)


def markdown(nb):
    return "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")


def links(nb):
    return re.findall(r"\]\(([^)\s]+)\)", markdown(nb))


@pytest.mark.parametrize("name", ["index.ipynb", "errata.ipynb"])
def test_committed_without_outputs(name):
    nb = read(name)
    nbformat.validate(nb)
    assert all(not c.get("outputs") and c.get("execution_count") is None
               for c in nb.cells if c.cell_type == "code")


def test_index_links_every_assignment_in_course_order():
    targets = links(read("index.ipynb"))
    wanted = [f"../release/{n}/{n}.ipynb" for n in ASSIGNMENTS]
    assert [t for t in targets if t.startswith("../release/")] == wanted
    assert "errata.ipynb" in targets


def test_index_links_resolve_for_built_assignments():
    for target in links(read("index.ipynb")):
        path = (NOTEBOOKS / target).resolve()
        if target.startswith("../release/") and not path.parent.is_dir():
            continue  # assignment not released in this checkout yet (CI checks release/ is in sync)
        assert path.is_file(), f"index links to missing {target}"


def test_errata_covers_all_eleven_mistakes_with_sources():
    text = markdown(read("errata.ipynb"))
    numbers = [int(n) for n in re.findall(r"^## (\d+)\. ", text, flags=re.M)]
    # DESIGN.md's eleven come first, in order; mistakes found later are appended.
    assert numbers == list(range(1, len(numbers) + 1)) and len(numbers) >= 11
    for part in ["What the material says", "Correction", "Why", "Source"]:
        assert text.count(f"**{part}.**") == len(numbers), part


def execute(name):
    nb = read(name)
    NotebookClient(nb, timeout=180, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    errors = [o for o in outputs if o.output_type == "error"]
    assert not errors, errors[0].get("evalue") if errors else ""
    return "".join(o.get("text", "") + str(o.get("data", {}).get("text/markdown", "")) for o in outputs)


@pytest.fixture(scope="module")
def kernel_env(tmp_path_factory):
    # Keep the student's real ledger untouched: progress.show() reads COURSE_LEDGER.
    mp = pytest.MonkeyPatch()
    mp.setenv("COURSE_LEDGER", str(tmp_path_factory.mktemp("ledger") / "ledger.json"))
    yield mp
    mp.undo()


@pytest.mark.slow
def test_index_executes(kernel_env):
    text = execute("index.ipynb")
    explorers = sorted(NOTEBOOKS.glob("explore_*.ipynb"))
    for path in explorers:
        assert f"({path.name})" in text
    if not explorers:
        assert "No explorer notebooks" in text


def test_the_mixture_of_experts_notes_live_with_the_instructors_not_on_the_errata_page():
    # they teach what Lab 07's locks ask, and a student can open the errata page before locking (issue 48)
    assert "Mixtures of experts" not in markdown(read("errata.ipynb"))
    notes = (REPO / "docs" / "instructors" / "teaching-notes.md").read_text(encoding="utf-8")
    moe = notes[notes.index("### Three claims about MoE training"):notes.index("## Chapter 10")]
    assert moe.count("* **") == 3 and moe.count("Sources:") == 3
    assert "GShard" in moe and "Switch Transformers" in moe and "DeepSeek-V3" in moe


@pytest.mark.slow
def test_errata_executes_and_shows_corrected_numbers(kernel_env):
    text = execute("errata.ipynb")
    for expected in [
        "peak: 989 TFLOPS",                 # 1
        "HDR 25 GB/s",                      # 2
        "fraction (p-1)/(m+p-1):        27.3%",  # 3: p=4, m=8 -> 3/11
        "0.5 x the bound",                  # 4
        "(2048x more)",                     # 5
        "117 MB = 112 MiB",                 # 7
        "overhead 375.0%, share of step 79%",
        "NDR 50 GB/s: 4x",                  # 8
        "saved 21.5 GB",                    # 9
        "21,194,342 kWh -> $1,059,717",     # 10
        "20.9% of a 300 ms step",           # 11
    ]:
        assert expected in text, expected
