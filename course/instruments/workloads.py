"""Lab 06 Act II workload presets, as plain data (no widgets, no bqplot).

The algorithm dashboard (:mod:`course.instruments.allreduce`) offers these presets and the Lab 06
declaration (:mod:`course.labs.lab06`) names the large one in its prose. They live here, apart from
the dashboard, so that declaring the lab (every grading and checking kernel imports the activity list)
does not import ipywidgets, bqplot and pandas.
"""

from __future__ import annotations

from .. import core

__all__ = ["WORKLOADS", "LARGE_WORKLOAD"]

GB = core.units.GB


def _gradient_bytes(params: float) -> float:
    """bf16 gradients of ``params`` parameters (``core.precision_bytes``: 2 bytes each)."""
    return params * core.precision_bytes("bf16")


#: Lab 06 Act II workloads: gradient bytes per step (bf16 gradients of 175B and 7B
#: parameters, from the core) and a small parameter-server update.
WORKLOADS = {
    f"175B gradients ({_gradient_bytes(175e9) / GB:.0f} GB)": _gradient_bytes(175e9),
    f"7B gradients ({_gradient_bytes(7e9) / GB:.0f} GB)": _gradient_bytes(7e9),
    "small update (< 1 MB)": 0.5e-3 * GB,
}
#: the preset the dashboard opens on
LARGE_WORKLOAD = next(iter(WORKLOADS))
