"""Instruments: ipywidgets + bqplot views over ``course.core``.

What is here
------------
base.py        :class:`Instrument`, the pattern every instrument follows (read its
               module docstring first), ``figure()`` and formatting helpers
cards.py       metric cards, failure banners, stakeholder message card, HUD footer
context.py     link choices from the catalog, Cloud/Edge/Mobile/Tiny track selector
allreduce.py   :class:`AllreduceComparator`, :class:`AlgorithmDashboard` (Lab 06)
ring.py        :class:`RingAllreduceView`, step-by-step ring all-reduce
scaling.py     :class:`ScalingExplorer`, data-parallel MFU vs GPUs (Lab 05 Act I)
efficiency.py  :class:`EfficiencyPlot`, samples/s vs GPUs, ideal line, diminishing returns
configurator.py :class:`Configurator`, TP x PP x DP design with plan() (Lab 05 Act II)
parallel_map.py :class:`ParallelMap`, which GPU holds which layers/shards, links per group
sync_audit.py  :class:`SyncAudit`, sync vs async SGD, stragglers, checkpoints, dollars
pipeline_timeline.py :class:`PipelineTimeline`, GPipe / 1F1B / interleaved / ZB-H1 / DualPipe timeline
bubble.py      :class:`BubbleChart`, bubble share vs micro-batches for one PP (Lab 05 Act II)
alltoall.py    :class:`AllToAllExplorer`, MoE dispatch/combine time vs EP, NVLink and network parts (Lab 07)
expert_load.py :class:`ExpertLoadView`, skewed router, capacity, dropped tokens, straggler share (Lab 07)

Prediction locks and the design ledger live one level up
(:mod:`course.prediction`, :mod:`course.ledger`).

How to write a new instrument
-----------------------------
1. Subclass :class:`Instrument`; set ``title`` and ``subtitle``.
2. In ``build()``: ``self.add_control("name", widget)`` for each control (use
   ``triggers_update=False`` for preset pickers that only set other controls);
   build each bqplot Figure ONCE (scales, axes, marks with placeholder data)
   and ``self.add_figure(fig)``; ``self.add_card("name", "Label")`` per card.
   Keep the marks as attributes (``self.curve``) to update them later.
   Helper handlers (a preset that sets other controls, a slider whose range
   follows another) go through ``self.observe("name", handler)``, which turns
   any exception into a banner like ``update()`` does.
3. In ``refresh(values)``: ``values`` maps control names to current values.
   Call the core ONCE per quantity, vectorized over the whole curve (pass an
   array of GPU counts, not a loop). Then ``self.set_marks(mark, x=..., y=...)``,
   ``self.set_card(...)``, ``self.set_math(html)`` with the equation and the
   current numbers substituted, ``self.flag(code, sentence)`` for each failure
   state (take the planner's violations as codes and sentences), and return a
   plain dict of the numbers shown (it becomes ``inst.result``).
4. Never catch exceptions of the core yourself to hide them: ``update()`` turns
   a ``ValueError`` into the banner ``invalid_input`` and anything else into
   ``instrument_error``; the instrument stays alive either way.
5. Tests (tests/instruments/): drive it over a grid and a hypothesis fuzz of
   control values (no exception escapes: ``inst.failures`` instead), compare
   ``inst.result`` with direct core calls, and check the Figure object is the
   same while mark arrays changed. ``tests/instruments/helpers.py`` has the
   shared assertions.
6. Browser: ``tests/browser/conftest.py`` gives ``lab_notebook(path)``, which
   opens a notebook in real JupyterLab (headless Chromium) and runs it.
   Benchmark: ``benchmarks/bench_instruments.py`` finds every instrument by
   itself and moves its first numeric slider (or the control named by the
   class attribute ``benchmark_control``); target < 10 ms per update.
7. Tracks (Cloud/Edge/Mobile/Tiny): ``TrackSelector().link_to(inst, ...)``
   makes each instrument follow the selector. Declare which control takes
   which part of a track in ``track_controls`` (roles ``"link"``,
   ``"devices"``, ``"gradient_gb"``; default ``{"link": "link"}``); an
   instrument that cannot model a track returns the reason from
   ``track_unsupported(track)`` (``context.gpu_cluster_only`` for GPU-cluster
   models) and then shows the ``track_not_modelled`` banner with an empty
   ``result``. Choosing Cloud again restores the values it was built with.

In a notebook::

    from course.labs.activity import LabSession
    from course.instruments import AllreduceComparator
    lab = LabSession("lab06")
    lab.lock("act1")
    comparator = lab.gate("act1", AllreduceComparator(gpus=128))
    comparator
"""

from __future__ import annotations

import importlib
import importlib.util

#: submodule -> the public names it defines: the package's one list of its public names, in order.
#: Importing this package imports none of them (nor ipywidgets, bqplot and, through bqplot, pandas): a
#: grading or checking kernel imports the activity list, whose Lab 06 declaration reads :mod:`.workloads`,
#: and never draws; ``__getattr__`` imports a name on first use.
PUBLIC = {
    "base": ("Instrument", "figure", "fmt_bytes", "fmt_rate", "fmt_time", "to_plain"),
    "cards": ("HudFooter", "banner_html", "metric_card_html", "stakeholder_card"),
    "context": ("TrackSelector", "link_options"),
    "allreduce": ("AlgorithmDashboard", "AllreduceComparator"),
    "bubble": ("BubbleChart",),
    "configurator": ("Configurator",),
    "efficiency": ("EfficiencyPlot",),
    "parallel_map": ("ParallelMap",),
    "pipeline_timeline": ("PipelineTimeline",),
    "ring": ("RingAllreduceView",),
    "scaling": ("ScalingExplorer",),
    "sync_audit": ("SyncAudit",),
    "alltoall": ("AllToAllExplorer",),
    "expert_load": ("ExpertLoadView",),
    "measured": ("AlphaBetaBench", "AllreduceRace"),
}

#: public name -> the submodule that defines it
_SOURCES = {name: module for module, names in PUBLIC.items() for name in names}
__all__ = list(_SOURCES)
#: the submodules that define the public names, in order (what a lab notebook's first cell may import)
MODULES = tuple(PUBLIC)


def __getattr__(name: str):
    """Import a public name (or a submodule, ``course.instruments.ring``) on first use (PEP 562)."""
    if name in _SOURCES:
        value = getattr(importlib.import_module(f".{_SOURCES[name]}", __name__), name)
    elif not name.startswith("__") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        value = importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # once: later lookups do not come back here
    return value


def __dir__():
    return sorted(set(globals()) | set(_SOURCES))

