"""Chart details a student tripped over on the second day (issue 36): a divider that named the wrong
link, marks that covered each other, a line hidden under another."""

from __future__ import annotations

import numpy as np

from course.instruments import AlgorithmDashboard, ScalingExplorer


def _marks(instrument):
    return list(instrument.figures[0].marks)


def test_the_node_divider_names_the_fabric_chosen():
    explorer = ScalingExplorer()
    labels = {}
    for label, fabric in explorer.controls["fabric"].options:
        explorer.controls["fabric"].value = fabric
        labels[str(fabric)] = explorer.edge_label.text[0]
    ethernet = [text for fabric, text in labels.items() if "Ethernet" in fabric]
    assert ethernet and all("Ethernet" in text and "InfiniBand" not in text for text in ethernet), labels
    assert all(text.startswith("NVLink") for text in labels.values()), labels


def test_the_stakeholders_marks_lie_above_the_selected_n():
    explorer = ScalingExplorer()
    marks = _marks(explorer)
    assert marks.index(explorer.measured) > marks.index(explorer.current)


def test_the_double_binary_tree_is_dashed_above_rabenseifner_and_the_crossover_sits_inside_your_message():
    dashboard = AlgorithmDashboard(gpus=128)
    marks = _marks(dashboard)
    assert dashboard.dashed_curves.line_style == "dashed"
    assert dashboard.dashed_curves.labels == ["double binary tree"]
    assert "double binary tree" not in dashboard.curves.labels
    assert marks.index(dashboard.dashed_curves) > marks.index(dashboard.curves)
    # both curves still carry the core's numbers: the dashed one is the double binary tree's times
    assert np.all(np.asarray(dashboard.dashed_curves.y) > 0)
    assert marks.index(dashboard.crossings) > marks.index(dashboard.current)
    assert dashboard.crossings.default_size < dashboard.current.default_size
