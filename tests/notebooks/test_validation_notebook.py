"""The validation notebook runs top to bottom and every published run is matched or explained.

It plans each published large run (Megatron-LM, Korthikanti et al., MT-NLG, BLOOM, OPT, Llama 3)
with its paper's configuration; its summary cell asserts that every prediction outside the ±15 %
band has a written explanation. This test executes it in a real kernel and reads that summary.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parents[2]
NOTEBOOK = REPO / "notebooks" / "validation.ipynb"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), "commit without outputs"
    NotebookClient(nb, timeout=180, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path_factory.mktemp("validation"))}}).execute()
    return nb


def _text(nb):
    return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs
                   if o.output_type == "stream")


def test_runs_without_errors_and_draws_the_chart(executed):
    outputs = [o for c in executed.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in outputs)


def test_every_published_run_is_within_the_band_or_explained(executed):
    summary = re.search(r"runs (\d+); within ±15 %[^:]*: (\d+); outside, explained above: (\d+); unexplained: (\d+)",
                        _text(executed))
    assert summary, _text(executed)
    runs, within, explained, unexplained = map(int, summary.groups())
    assert runs >= 18 and unexplained == 0 and within + explained == runs
    assert within >= 12  # the calibration rows and most independent runs match
    # issue 39: held-out JAX, A100 and H200 runs (Pax, MaxText, llm-foundry, torchtitan), each within its band
    added = re.search(r"runs added for JAX, A100 and H200: (\d+); within their bands: (\d+)", _text(executed))
    assert added and int(added.group(1)) >= 10 and int(added.group(2)) == int(added.group(1)), _text(executed)


def test_held_out_rows_are_a_third_and_reported_apart(executed):
    # issue 46: a held-out set chosen before fitting, at least a third of the rows, reported apart from the fitted
    # rows, misses included; every constant fitted in issue 46 recomputed from the fitted rows alone
    text = _text(executed)
    held = re.search(r"held out: (\d+) of (\d+) runs \((\d+)%\); within their band: (\d+); published figure inside "
                     r"the planner's range: (\d+)", text)
    assert held, text
    held_out, runs = int(held.group(1)), int(held.group(2))
    assert held_out >= 25 and 3 * held_out >= runs
    assert re.search(r"median range width, all rows: \d+%", text)
    for name in ("torchtitan", "llm-foundry", "maxtext"):
        assert re.search(rf"{name}: fitted on \d+ rows, geometric mean", text), name
    page = "\n".join(c.source for c in executed.cells if c.cell_type == "markdown")
    assert "does not land" in page and "Fitted and held-out rows" in page


def test_sources_and_miss_explanations_are_on_the_page():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    for source in ("Narayanan et al. 2021", "Korthikanti et al. 2022", "Smith et al. 2022", "Le Scao et al. 2022",
                   "Zhang et al. 2022", "Dubey et al. 2024", "llm-foundry", "JAX-Toolbox", "dgxc-benchmarking",
                   "gpu-recipes", "torchtitan"):
        assert source in text
    assert "What the model leaves out" in text


def test_index_links_the_validation_page():
    index = nbformat.read(REPO / "notebooks" / "index.ipynb", as_version=4)
    assert any("(validation.ipynb)" in c.source for c in index.cells if c.cell_type == "markdown")
