"""One memory figure (issue 36): Lab 05, Lab 06 and the tutorial write an H100's memory one way, the
85.5 GB (GB = 10^9 bytes) a process can allocate; the vendor's "80 GB" appears only where it is explained
('sold as "80 GB"'), never as a capacity, and no GiB or "e9 bytes" figure stands beside it."""

from __future__ import annotations

import re

import pytest

from course import core
from course.core import catalog
from course.instruments import Configurator, ScalingExplorer
from course.labs import lab05, lab06, tutorial

EXPLAINED = 'sold as "80 GB"'


def _stray_capacities(text: str) -> list:
    text = text.replace(EXPLAINED, "")
    return re.findall(r"\b80 ?GB\b|GiB|\de9 bytes", text)


def _lab_text(lab) -> str:
    parts = [cell.source for cell in lab.cells()]
    for act in lab.acts:
        if act.lock is not None:
            parts += [act.lock.question, *act.lock.options.values(), act.lock.explanation]
    return "\n".join(parts)


@pytest.mark.parametrize("lab", [lab05.LAB, lab06.LAB, tutorial.LAB], ids=lambda lab: lab.prefix)
def test_every_memory_figure_of_a_lab_is_the_one_capacity(lab):
    text = _lab_text(lab)
    assert not _stray_capacities(text), _stray_capacities(text)


def test_the_marketing_name_is_explained_where_memory_first_appears():
    for lab in (lab05.LAB, lab06.LAB, tutorial.LAB):
        text = _lab_text(lab)
        assert EXPLAINED in text, lab.prefix
        first_gb_of_h100 = text.find("85.5 GB")
        assert first_gb_of_h100 >= 0 and text.find(EXPLAINED) <= first_gb_of_h100 + 200, lab.prefix


def test_cards_axis_banner_and_verdict_use_85_5_gb():
    h100 = catalog.accelerator("H100")
    explorer = ScalingExplorer(params_b=175, gpus=8)  # out of memory: 16 B x 175e9 / 8 on one GPU
    configurator = Configurator(model="gpt3-175b", cluster="h100-1024", tp=4, pp=8)
    configurator.controls["zero_stage"].value = 0
    configurator.controls["recompute"].value = "none"
    assert "out_of_memory" in explorer.failures and "out_of_memory" in configurator.failures
    for inst in (explorer, configurator):
        shown = inst.cards.value + inst.banner.value
        assert "85.5 GB" in shown and not _stray_capacities(shown), shown
    assert configurator.capacity.y[0] == pytest.approx(h100.memory_capacity / 1e9)
    assert configurator.capacity.labels == ["GPU memory, 85.5 GB"]
    # the tutorial's verdict (the planner's) and its lock say the same figure
    verdict = dict(core.plan("llama3-70b", tutorial.LAB.spec["cluster"], tp=1, pp=1, dp=256).violations)
    assert "has 85.5 GB." in verdict["out_of_memory"] and "GiB" not in verdict["out_of_memory"]
    assert "85.5 GB" in tutorial.EX1.lock.question
