"""Instruments over *measured* collectives (Lab 08): your machine's alpha and beta, and a race of
all-reduce algorithms, each beside the core's model.

Measuring is not a control change: it starts real processes (:mod:`course.launch`, sweeps of
:mod:`course.launch.bench`) and takes seconds, so it happens only on :meth:`MeasuredInstrument.measure`
(the *Measure* button, or :meth:`~MeasuredInstrument.measure_if_missing`). Measurements are kept
per configuration (operation and rank count), saved with the design ledger (:meth:`record`) and taken
back by :meth:`restore`, so a restart or Run All shows them again without measuring. Every control
change only re-reads stored samples and calls the core once: medians and quartiles
(:func:`course.core.timing_summary`), the fit (:func:`course.core.fit_alpha_beta`), model curves
(:func:`course.core.allreduce_time`), crossovers (:func:`course.core.crossover_message_bytes`,
:func:`course.core.measured_crossover`). No physics lives here.
"""

from __future__ import annotations

import html
import time
from typing import Any, Callable, Dict, Optional, Sequence

import bqplot as bq
import ipywidgets as widgets
import numpy as np

from .. import core
from ..theme import mark_color
from .base import Instrument, figure, fmt_bytes, fmt_rate, fmt_time
from .charts import UNNAMED, decade_ticks, set_ticks

__all__ = ["MeasuredInstrument", "AlphaBetaBench", "AllreduceRace", "SIZES", "algorithm_label"]

#: message sizes measured: 1 KiB to 64 MiB, every factor of 4 (9 sizes)
SIZES = tuple(2**k for k in range(10, 27, 2))
#: the rank counts a student may ask for (more than the machine's cores is allowed, and flagged)
MAX_RANKS = 8
ALGORITHM_COLORS = {"ring": mark_color("green"), "recursive_doubling": mark_color("amber"),
                    "tree": mark_color("blue"), "library": mark_color("purple"), "yours": mark_color("red")}
ALGORITHM_LABELS = {"ring": "ring", "recursive_doubling": "recursive doubling", "tree": "binomial tree",
                    "library": "MPI's Allreduce", "yours": "your ring"}
#: the core's model of each measured algorithm (MPI's own is modelled as Rabenseifner, MPICH's choice
#: for large messages: Thakur, Rabenseifner & Gropp 2005, sec. 5)
CORE_NAME = {"ring": "ring", "recursive_doubling": "recursive_doubling", "tree": "tree",
             "library": "rabenseifner", "yours": "ring"}


#: what an instrument without a measurement for its settings says (a status, not a failure state)
NOT_MEASURED = ("<div class='course-ui' role='status'>Not measured yet for these settings: press <b>Measure</b> "
                "(it starts real processes and takes a few seconds).</div>")


def grading() -> bool:
    """Whether nbgrader is running this notebook (autograde or validate): then nothing is measured, since
    grading needs no measurement and must not start processes for one (nbgrader sets the variable)."""
    import os

    return bool(os.environ.get("NBGRADER_EXECUTION"))


def algorithm_label(name: str) -> str:
    return ALGORITHM_LABELS.get(name, name)


def _time_tick(seconds: float) -> str:
    return fmt_time(seconds)


class MeasuredInstrument:
    """What an instrument whose data are measured on real ranks adds to :class:`Instrument` (a mixin:
    ``class Bench(MeasuredInstrument, Instrument)``): measurements kept per configuration, a Measure
    button, the machine's failure states, and the measurements in the ledger entry.

    Subclasses define :meth:`config_key` (which stored measurement the controls select) and
    :meth:`run_measurement` (the launch that makes one); ``self.measurements[key]`` is plain data
    (lists), so it goes into the ledger as it is.
    """

    #: seconds a measurement may take before it is stopped
    timeout = 240.0

    def __init__(self, launcher: Optional[Callable] = None, **initial: Any):
        self.measurements: Dict[str, dict] = {}
        self.last_launch_reason = ""
        self._progress_what, self._progress_started = "Measuring", time.monotonic()
        self._launcher = launcher
        self.measure_button = widgets.Button(description="Measure", icon="play", tooltip="time it on real processes")
        self.measure_button.add_class("course-control-measure")
        self.measure_button.on_click(lambda _button: self._measure_clicked())
        # the sweep's own progress bar (fed by course.launch's progress reports): a press of the button has no
        # cell output for a tqdm bar, so the instrument carries one; hidden until the first measurement
        self.progress_bar = widgets.FloatProgress(value=0.0, min=0.0, max=1.0, description="",
                                                  layout=widgets.Layout(width="260px"))
        self.progress_bar.add_class("course-progress")
        self.progress_text = widgets.HTML()
        self.progress = widgets.HBox([self.progress_bar, self.progress_text],
                                     layout=widgets.Layout(display="none", align_items="center"))
        self.progress.add_class("course-ui")
        self.measure_row = widgets.HBox([self.measure_button, self.progress], layout=widgets.Layout(align_items="center"))
        super().__init__(**initial)

    # -- to implement --------------------------------------------------------------------------
    def config_key(self, values: dict) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def run_measurement(self, values: dict) -> dict:  # pragma: no cover - abstract
        raise NotImplementedError

    # -- measuring -----------------------------------------------------------------------------
    def launch(self, target, *args, ranks: int, **kwargs):
        """Start ``target`` on ``ranks`` processes (course.launch.run), its progress shown on :attr:`progress_bar`."""
        kwargs.setdefault("progress", self.show_progress)
        if self._launcher is not None:
            return self._launcher(target, *args, ranks=ranks, **kwargs)
        from course.launch import run

        kwargs.setdefault("timeout", self.timeout)
        return run(target, *args, ranks=ranks, **kwargs)

    # -- the progress bar ------------------------------------------------------------------------
    def begin_progress(self, what: str) -> None:
        """Show the progress bar at zero, saying ``what`` is running."""
        self._progress_what, self._progress_started = what, time.monotonic()
        with self.progress_bar.hold_sync():
            self.progress_bar.value, self.progress_bar.max, self.progress_bar.bar_style = 0.0, 1.0, "info"
        self.progress_text.value = f"<span role='status'>{html.escape(what)}… (the kernel's ■ interrupt stops it)</span>"
        self.progress.layout.display = "flex"

    def show_progress(self, done, total) -> None:
        """What course.launch calls each time rank 0 reports a step done (``total`` steps in all)."""
        with self.progress_bar.hold_sync():
            if total:
                self.progress_bar.max = float(total)
            self.progress_bar.value = float(min(done, self.progress_bar.max))
        count = f"{done:g} of {total:g} steps" if total else f"{done:g} steps"
        self.progress_text.value = (f"<span role='status'>{html.escape(self._progress_what)}: {count} "
                                    "(the kernel's ■ interrupt stops it)</span>")

    def end_progress(self, outcome: str, said: str) -> None:
        """Finish the bar: ``outcome`` "done" (full, green), "failed" (red) or "stopped" (amber), with ``said``."""
        seconds = time.monotonic() - getattr(self, "_progress_started", 0.0)
        with self.progress_bar.hold_sync():
            if outcome == "done":
                self.progress_bar.value = self.progress_bar.max
            self.progress_bar.bar_style = {"done": "success", "failed": "danger"}.get(outcome, "warning")
        took = f" after {seconds:.1f} s" if outcome != "done" else f" in {seconds:.1f} s"
        self.progress_text.value = f"<span role='status'>{html.escape(said)}{took}</span>"

    # -- measuring -----------------------------------------------------------------------------
    def measure(self) -> dict:
        """Measure the current configuration now (seconds: it starts real processes) and show it.

        The progress bar moves while the sweep runs and finishes when it ends; an interrupt (the
        kernel's stop button) ends every rank, keeps nothing, says so on the bar, and propagates."""
        values = self.values()
        self.measure_button.disabled = True
        self.begin_progress(self.measuring_what(values))
        table = getattr(self, "table", None)
        if table is not None and table.value == NOT_MEASURED:  # "press Measure" while it measures: say nothing
            table.value = ""
        try:
            record = self.run_measurement(values)
        except KeyboardInterrupt:
            self.end_progress("stopped", "Stopped: the measurement was interrupted, every rank ended and nothing "
                                         "was kept")
            raise
        except BaseException:
            self.end_progress("failed", "The measurement could not run")
            raise
        finally:
            self.measure_button.disabled = False
        if record.get("error"):
            self.last_launch_reason = record["error"]
            self.end_progress("failed", "The measurement did not finish (see the message above)")
        else:
            self.last_launch_reason = ""
            self.measurements[self.config_key(values)] = record
            self.end_progress("done", f"Measured on {record.get('ranks', '?')} ranks")
        self.update()
        return record

    def measuring_what(self, values: dict) -> str:
        """What the progress bar says while measuring ``values``."""
        return "Measuring on real processes"

    def measure_if_missing(self) -> "MeasuredInstrument":
        """Measure unless the current configuration has a measurement (restored from the ledger, say)
        or the instrument is still locked behind its prediction. Returns ``self`` (a cell shows it).
        An interrupt propagates (Run All stops there); a failure is shown on the instrument."""
        if not self.gated and not grading() and self.config_key(self.values()) not in self.measurements:
            try:
                self.measure()
            except KeyboardInterrupt:
                raise
            except Exception as exc:  # noqa: BLE001 -- shown as a banner, never a traceback
                self._show_error(exc, "measure")
        return self

    def _measure_clicked(self) -> None:
        """The Measure button: an interrupt ends the sweep and is said on the bar, never a traceback in the log."""
        try:
            self.measure()
        except KeyboardInterrupt:
            pass
        except Exception as exc:  # noqa: BLE001 -- shown as a banner, never a traceback
            self._show_error(exc, "measure")

    def clear_readouts(self) -> None:
        """Cards and math peek with nothing measured for the current settings: a dash each, no formula."""
        for name in self._cards:
            self.set_card(name, "—", "not measured for these settings")
        self.set_math("Nothing measured for these settings yet: press Measure.")

    def measured(self, values: Optional[dict] = None) -> Optional[dict]:
        return self.measurements.get(self.config_key(values or self.values()))

    def _machine(self, result, ranks: int) -> dict:
        return {"ranks": ranks, "cores": int(result.cores), "load": round(float(result.load), 2),
                "seconds": round(float(result.seconds), 2)}

    def _settings(self, values: dict) -> dict:
        return {name: value for name, value in values.items() if isinstance(value, (int, float, str))}

    def flag_machine(self, record: dict) -> None:
        """Failure states of the machine a measurement ran on: oversubscribed, or busy with others' work."""
        ranks, cores, load = record["ranks"], record["cores"], record["load"]
        if ranks > cores:
            self.flag("more_ranks_than_cores", f"{ranks} ranks on {cores} cores: ranks took turns on a core, so "
                      "these times measure the scheduler, not the machine's links. Use at most "
                      f"{cores} ranks here.")
        elif load + ranks > cores + 0.5:
            self.flag("busy_machine", f"The machine was busy while measuring (load average {load:.1f} on {cores} "
                      "cores): other programs took turns with your ranks, so times are slower and noisier than "
                      "the machine's own. Measure again when it is quieter.", severity="warning")

    def describe_unmeasured(self, fig: bq.Figure, result: dict) -> str:
        """The chart's words before a measurement for the current settings (a screen reader's NOT_MEASURED)."""
        said = {"largest": lambda n: f"fit up to {fmt_bytes(n)}"}  # a size in bytes, as the slider says it
        settings = ", ".join(said[name](value) if name in said else f"{name} {value}"
                             for name, value in result.items() if name != "measured")
        return f"Chart: {fig.title}. Not measured yet for these settings ({settings}): press Measure."

    # -- ledger --------------------------------------------------------------------------------
    def ledger_entry(self) -> dict:
        entry = super().ledger_entry()
        entry["measurements"] = self.measurements
        return entry

    def restore(self, key: str, track: Any = None, ledger=None) -> "MeasuredInstrument":
        """Take back the configuration, the failure states and the *measurements* saved under ``key``."""
        from ..ledger import Ledger

        try:
            entry = (ledger or Ledger()).get(key) or {}
        except Exception:  # noqa: BLE001 - an unreadable ledger restores nothing
            entry = {}
        saved = entry.get("measurements")
        if isinstance(saved, dict):
            for name, record in saved.items():
                if isinstance(record, dict) and isinstance(record.get("sizes"), list):
                    self.measurements.setdefault(str(name), record)
        super().restore(key, track=track, ledger=ledger)
        self.update()
        return self

    # -- shared chart pieces -----------------------------------------------------------------
    def _log_axes(self, fig: bq.Figure, seconds: np.ndarray) -> None:
        x_axis, y_axis = fig.axes[0], fig.axes[1]
        set_ticks(x_axis, decade_ticks(SIZES[0], SIZES[-1]), fmt_bytes)
        finite = seconds[np.isfinite(seconds) & (seconds > 0)]
        if finite.size:
            lo, hi = 10.0 ** np.floor(np.log10(finite.min())), 10.0 ** np.ceil(np.log10(finite.max()))
            scale = y_axis.scale
            if (scale.min, scale.max) != (lo, hi):
                with scale.hold_sync():
                    scale.min, scale.max = float(lo), float(hi)
            set_ticks(y_axis, decade_ticks(lo, hi, max_ticks=8, strides=(1, 2, 3)), _time_tick)


#: where a Lines mark sits, hidden, before it has data: bqplot draws a path of all-NaN values as ``d="null"`` and
#: places a series' label at its last point (``translate(x, NaN)``), a console error per mark and redraw
PLACEHOLDER_SECONDS = 1e-3


def _placeholder(shape) -> np.ndarray:
    """Finite y values for a hidden Lines mark with no data yet (:data:`PLACEHOLDER_SECONDS`)."""
    return np.full(shape, PLACEHOLDER_SECONDS)


def _bars(sizes: np.ndarray, low: np.ndarray, high: np.ndarray):
    """Vertical spread bars (quartile to quartile) as one Lines mark: one two-point line per size."""
    x = np.repeat(sizes[:, None], 2, axis=1)
    y = np.stack([low, high], axis=1)
    return x, y


class AlphaBetaBench(MeasuredInstrument, Instrument):
    """Act I: time ping-pong or MPI's all-reduce from 1 KiB to 64 MiB and fit alpha and beta.

    Controls: ``operation`` ("ping-pong", "all-reduce"), ``ranks`` (2-8; ping-pong always pairs
    ranks 0 and 1), ``repeats`` (timed repeats per size, after one warm-up), ``largest`` (the largest
    size fitted: fewer than 4 sizes is the *too few sizes* failure). Measure with the button.
    Result: ``latency``/``latency_error`` (s), ``bandwidth``/``bandwidth_error`` (bytes/s),
    ``trusted``, ``reasons``, the medians and the machine it ran on.
    """

    title = "Your machine's α and β"
    subtitle = "Measured medians (dots) with their spread (bars), the fitted α-β model (line)."

    def build(self):
        self.add_control("operation", widgets.ToggleButtons(options=[("ping-pong", "ping-pong"),
                                                                     ("all-reduce", "all-reduce")],
                                                            value="ping-pong", description="operation"))
        self.add_control("ranks", widgets.IntSlider(value=2, min=2, max=MAX_RANKS, description="ranks p"))
        self.add_control("repeats", widgets.IntSlider(value=5, min=3, max=30, description="repeats"))
        self.add_control("largest", widgets.SelectionSlider(options=[(fmt_bytes(s), s) for s in SIZES[1:]],
                                                            value=SIZES[-1], description="fit up to"))
        xs, ys = bq.LogScale(min=float(SIZES[0]), max=float(SIZES[-1])), bq.LogScale(min=1e-6, max=1.0)
        grid = np.geomspace(SIZES[0], SIZES[-1], 64)
        self.grid = grid
        # no data yet: hidden lines at finite placeholders, scatters with no points (see PLACEHOLDER_SECONDS)
        self.model = bq.Lines(x=grid, y=_placeholder(grid.size), scales={"x": xs, "y": ys}, visible=False,
                              colors=[mark_color("blue")], stroke_width=2, labels=["α-β model (fit)"],
                              display_legend=True)
        self.spread = bq.Lines(x=[[SIZES[0], SIZES[0]]], y=_placeholder((1, 2)), scales={"x": xs, "y": ys},
                               colors=[mark_color("gray")], stroke_width=2, labels=["spread (quartiles)"],
                               visible=False)
        self.points = bq.Scatter(**UNNAMED, x=[], y=[], scales={"x": xs, "y": ys},
                                 colors=[mark_color("ink")], default_size=50, labels=["measured median"],
                                 display_legend=True)
        self.left_out = bq.Scatter(**UNNAMED, x=[], y=[], scales={"x": xs, "y": ys},
                                   colors=[mark_color("gray")], marker="cross", default_size=40,
                                   labels=["measured, not fitted"], display_legend=True)
        self.fig = self.add_figure(figure([self.spread, self.model, self.points, self.left_out], xs, ys,
                                          "message size", "time", title="Time vs message size", height="360px",
                                          legend=True))
        for name, label in (("alpha", "Latency α"), ("bandwidth", "Bandwidth 1/β"), ("fit", "Fit"),
                            ("machine", "Measured on")):
            self.add_card(name, label)
        self.table = widgets.HTML()
        self.extra.children = (self.measure_row, self.table)

    def config_key(self, values: dict) -> str:
        ranks = 2 if values["operation"] == "ping-pong" else int(values["ranks"])
        return f"{values['operation']}@{ranks}"

    def measuring_what(self, values: dict) -> str:
        ranks = 2 if values["operation"] == "ping-pong" else int(values["ranks"])
        return f"Timing {values['operation']} on {ranks} ranks, {len(SIZES)} sizes × {int(values['repeats'])} repeats"

    def run_measurement(self, values: dict) -> dict:
        from course.launch import bench

        repeats = int(values["repeats"])
        if values["operation"] == "ping-pong":
            ranks = 2
            result = self.launch(bench.ping_pong, list(SIZES), repeats, 1, ranks=ranks)
            samples = result.values[0] if result.ok else None
        else:
            ranks = int(values["ranks"])
            result = self.launch(bench.allreduce_sweep, list(SIZES), ["library"], repeats, 1, ranks=ranks)
            samples = result.values[0]["seconds"]["library"] if result.ok else None
        if samples is None:
            return {"error": result.reason}
        return {"sizes": list(SIZES), "warmup": 1, "samples": np.asarray(samples).tolist(),
                **self._machine(result, ranks)}

    def coefficients(self, operation: str, ranks: int):
        """The latency count and bandwidth factor of what was timed (core.allreduce_coefficients)."""
        if operation == "ping-pong":
            return 1.0, 1.0
        return core.allreduce_coefficients(ranks, "ring")

    def refresh(self, v):
        record = self.measured(v)
        if record is None:
            reason = self.last_launch_reason
            if reason:
                self.flag("measurement_failed", f"The measurement did not finish: {reason}")
            else:
                self.table.value = NOT_MEASURED
            # another configuration's points and numbers would pass for these settings': clear them
            self.clear_readouts()
            self.set_marks(self.points, x=[], y=[])
            self.set_marks(self.left_out, x=[], y=[])
            self.set_marks(self.spread, visible=False)
            self.set_marks(self.model, visible=False)
            return {"measured": False, **self._settings(v)}
        sizes = np.asarray(record["sizes"], dtype=float)
        summary = core.timing_summary(record["samples"], warmup=int(record.get("warmup", 1)))
        used = sizes <= float(v["largest"])
        ranks = int(record["ranks"])
        a, b = self.coefficients(v["operation"], ranks)
        fit = core.fit_alpha_beta(sizes[used], summary.median[used], a, b, spread=summary.spread[used],
                                  ranks=ranks, cores=int(record["cores"]))
        self.set_marks(self.points, x=sizes[used], y=summary.median[used])
        self.set_marks(self.left_out, x=sizes[~used], y=summary.median[~used])
        bx, by = _bars(sizes, summary.q1, summary.q3)
        self.set_marks(self.spread, x=bx, y=by, visible=True)
        model_y = np.asarray(fit.predict(self.grid, a, b), dtype=float)
        drawn = bool(np.isfinite(model_y).any())  # a fit that failed has no curve: hide it, never draw all-NaN
        self.set_marks(self.model, y=model_y if drawn else _placeholder(self.grid.size), visible=drawn)
        self._log_axes(self.fig, np.concatenate([summary.q1, summary.q3]))
        for code, sentence in fit.reasons:
            if code != "more_ranks_than_cores":  # flag_machine says it, with the machine's numbers
                self.flag(code, f"The fit cannot be trusted: {sentence}.")
        self.flag_machine(record)
        tone = "good" if fit.trusted else "warn"
        self.set_card("alpha", fmt_time(fit.latency), f"± {fmt_time(fit.latency_error)}", tone)
        self.set_card("bandwidth", fmt_rate(fit.bandwidth), f"± {fmt_rate(fit.bandwidth_error)}", tone)
        self.set_card("fit", "trusted" if fit.trusted else "not trusted",
                      f"{fit.sizes} sizes, rms residual {fit.residual:.0%}", tone)
        self.set_card("machine", f"{ranks} ranks", f"{record['cores']} cores, load {record['load']:.1f}")
        self.set_math(f"t = a·α + b·n·β with a = {a:g}, b = {b:g} "
                      f"({'one message' if v['operation'] == 'ping-pong' else f'ring on p = {ranks}'}): "
                      f"α = {fmt_time(fit.latency)} ± {fmt_time(fit.latency_error)}, "
                      f"1/β = {fmt_rate(fit.bandwidth)} ± {fmt_rate(fit.bandwidth_error)}; "
                      f"weighted least squares on the medians of {summary.repeats} repeats per size "
                      "(course.core.fit_alpha_beta).")
        rows = "".join(f"<tr><td>{fmt_bytes(n)}</td><td>{fmt_time(m)}</td><td>{fmt_time(lo)} – {fmt_time(hi)}</td>"
                       f"<td>{'yes' if u else 'no'}</td></tr>"
                       for n, m, lo, hi, u in zip(sizes, summary.median, summary.q1, summary.q3, used))
        self.table.value = ("<details class='course-ui'><summary>Measured points as a table</summary>"
                            "<table><thead><tr><th>size</th><th>median</th><th>quartiles</th><th>fitted</th></tr>"
                            f"</thead><tbody>{rows}</tbody></table></details>")
        return {"operation": v["operation"], "ranks": ranks, "cores": record["cores"], "load": record["load"],
                "latency": fit.latency, "latency_error": fit.latency_error, "bandwidth": fit.bandwidth,
                "bandwidth_error": fit.bandwidth_error, "trusted": fit.trusted, "reasons": [c for c, _ in fit.reasons],
                "sizes": sizes.tolist(), "medians": summary.median.tolist(), "spread": summary.spread.tolist()}

    def describe(self, fig):
        r = self.result
        if not r:
            return super().describe(fig)
        if not r.get("medians"):  # nothing measured for these settings: say so, with the settings, not a KeyError
            return self.describe_unmeasured(fig, r)
        return (f"Chart: measured {r['operation']} time against message size on {r['ranks']} ranks, log-log. "
                f"Fitted latency {fmt_time(r['latency'])}, bandwidth {fmt_rate(r['bandwidth'])}; "
                f"the fit is {'trusted' if r['trusted'] else 'not trusted'}. "
                + " ".join(f"{fmt_bytes(n)}: {fmt_time(t)}." for n, t in zip(r["sizes"], r["medians"])))


class AllreduceRace(MeasuredInstrument, Instrument):
    """Acts II and III: all-reduce algorithms timed on real ranks, beside the core's model with the
    alpha and beta fitted in Act I (``model``: an :class:`AlphaBetaBench`, or ``alpha``/``bandwidth``).

    ``algorithms``: names from :data:`course.launch.bench.ALGORITHMS`; :meth:`use` adds the student's
    function as ``"yours"`` (and its correctness on awkward lengths and dtypes is checked first).
    ``show_bound`` draws the bandwidth bound 2(p-1)/p · n·β and reports the share of it reached.
    Result: ``medians`` per algorithm, the ``crossover_model`` and ``crossover_measured`` (recursive
    doubling vs ring, bytes), and with the bound ``bound_share`` at the largest size.
    """

    title = "All-reduce algorithms, measured"
    subtitle = "Measured medians (solid) beside the α-β model with your fitted α and β (dashed)."

    def __init__(self, model: Optional[AlphaBetaBench] = None, algorithms: Sequence[str] = ("ring", "recursive_doubling",
                 "tree", "library"), show_bound: bool = False, alpha: Optional[float] = None,
                 bandwidth: Optional[float] = None, **initial: Any):
        self.model_bench, self.algorithms = model, tuple(algorithms)
        self.show_bound, self.alpha, self.bandwidth = show_bound, alpha, bandwidth
        self.student: Optional[dict] = None
        self.student_check: Optional[list] = None
        #: outcome of the correctness check per version (source hash) of the student's function
        self.checks: Dict[str, list] = {}
        super().__init__(**initial)

    def build(self):
        self.add_control("ranks", widgets.IntSlider(value=2, min=2, max=MAX_RANKS, description="ranks p"))
        self.add_control("repeats", widgets.IntSlider(value=3, min=3, max=30, description="repeats"))
        # "yours" joins the marks' rows only once the student's ring was measured (:meth:`_set_rows`): a legend
        # entry for a ring not yet written would promise a line that is not there
        names = self.algorithms
        xs, ys = bq.LogScale(min=float(SIZES[0]), max=float(SIZES[-1])), bq.LogScale(min=1e-6, max=1.0)
        # no data yet: hidden at finite placeholders (PLACEHOLDER_SECONDS), without a legend; once measured each
        # mark holds only the rows of the algorithms that have times (:meth:`_set_rows`), so no series is all-NaN
        self.measured_lines = bq.Lines(x=np.asarray(SIZES, float), y=_placeholder((len(names), len(SIZES))),
                                       scales={"x": xs, "y": ys}, colors=[ALGORITHM_COLORS[a] for a in names],
                                       labels=[algorithm_label(a) for a in names], display_legend=False,
                                       stroke_width=2, marker="circle", marker_size=24, visible=False)
        self.model_lines = bq.Lines(x=np.asarray(SIZES, float), y=_placeholder((len(names), len(SIZES))),
                                    scales={"x": xs, "y": ys}, colors=[ALGORITHM_COLORS[a] for a in names],
                                    line_style="dashed", stroke_width=1.5, visible=False,
                                    labels=[f"{algorithm_label(a)} (model)" for a in names])
        self.bound = bq.Lines(x=np.asarray(SIZES, float), y=_placeholder(len(SIZES)), scales={"x": xs, "y": ys},
                              colors=[mark_color("gray")], line_style="dash_dotted", stroke_width=2, visible=False,
                              labels=["bandwidth bound 2(p−1)/p·n·β"], display_legend=self.show_bound)
        self.fig = self.add_figure(figure([self.model_lines, self.bound, self.measured_lines], xs, ys,
                                          "message size", "all-reduce time", title="Time vs message size",
                                          height="380px", legend=True))
        for name, label in (("fastest_small", "Fastest at 1 KiB"), ("fastest_large", "Fastest at 64 MiB"),
                            ("crossover", "Recursive doubling → ring"), ("bound", "Share of the bound"),
                            ("machine", "Measured on")):
            self.add_card(name, label)
        self.table = widgets.HTML()
        self.check_box = widgets.HTML()
        self.extra.children = (self.measure_row, self.check_box, self.table)

    def _set_rows(self, mark: bq.Lines, names: list, y: np.ndarray, suffix: str = "") -> None:
        """Show on ``mark`` the rows of ``y`` (one per name) that hold times, with their colours and labels;
        hide it, at its placeholder, when none does (bqplot logs an error for each all-NaN series)."""
        keep = [i for i in range(len(names)) if np.isfinite(y[i]).all()]
        legend = mark is self.measured_lines  # the measured lines carry the legend; the dashed models match their colours
        if not keep:
            self.set_marks(mark, visible=False, display_legend=False)
            return
        self.set_marks(mark, y=y[keep], colors=[ALGORITHM_COLORS[names[i]] for i in keep],
                       labels=[f"{algorithm_label(names[i])}{suffix}" for i in keep], visible=True,
                       display_legend=legend)

    def use(self, function: Callable) -> "AllreduceRace":
        """Race the student's all-reduce ``function(comm, x)`` too (its source is sent to the ranks).
        It is first run on awkward cases (lengths not divisible by p, several dtypes, 2 and 3 ranks);
        a wrong result is shown with the rank, case and element, and it is then left out of the race.
        The check runs now, or once the instrument's lock opens (at the next measurement); its outcome
        is kept per version of the function's source, with the measurements."""
        import hashlib
        import inspect

        from course.launch.processes import describe_target

        try:
            target = describe_target(function)
        except ValueError:
            target = {}
        if "source" not in target:
            target = {"source": inspect.getsource(function), "name": function.__name__}
        digest = hashlib.sha256(target["source"].encode()).hexdigest()[:12]
        self.student = {"source": target["source"], "name": target["name"], "version": digest}
        self.student_check = self.checks.get(digest)
        if self.student_check is None and not self.gated and not grading():
            self.begin_progress("Checking your ring")
            try:
                self._run_check()
            except KeyboardInterrupt:
                self.end_progress("stopped", "Stopped: the check was interrupted and every rank ended")
                raise
            except Exception as exc:  # noqa: BLE001 -- shown as a banner, never a traceback
                self.end_progress("failed", "Your ring could not be checked")
                self._show_error(exc, "check your function")
            else:
                self.end_progress("done" if self.student_check == [] else "failed",
                                  "Your ring is right" if self.student_check == [] else "Your ring is not right yet")
        self.update()
        return self

    def _run_check(self) -> None:
        self.student_check = self.check()
        self.checks[self.student["version"]] = self.student_check

    def check(self) -> list:
        """The student's function on every awkward case; one line per failed case (empty: all right)."""
        from course.launch import bench

        cases = [{"length": n, "dtype": d, "seed": 8} for n in (1, 5, 12, 1001) for d in ("float64", "float32", "int64")]
        problems = []
        said = self._progress_what
        self._progress_what = "Checking your ring on 2 and 3 ranks"
        for done, ranks in enumerate((2, 3)):
            self.show_progress(done, 2)
            result = self.launch(bench.check_allreduce, self.student["source"], self.student["name"], cases,
                                 ranks=ranks, timeout=20.0, progress=False)
            if not result.ok:
                problems.append(f"on {ranks} ranks: {result.reason}")
                continue
            for per_rank in result.values:
                for case in per_rank:
                    if not case["ok"]:
                        problems.append(f"on {ranks} ranks, rank {case['rank']}, length {case['length']}, "
                                        f"{case['dtype']}: {case['error']}")
        self.show_progress(2, 2)
        self._progress_what = said
        return problems

    def config_key(self, values: dict) -> str:
        mine = self.student and self.student_check == []
        return f"race@{int(values['ranks'])}" + (f"+yours:{self.student['version']}" if mine else "")

    def measuring_what(self, values: dict) -> str:
        names = len(self.algorithms) + (1 if self.student else 0)
        return f"Racing {names} all-reduce algorithms on {int(values['ranks'])} ranks, {len(SIZES)} sizes"

    def ledger_entry(self) -> dict:
        entry = super().ledger_entry()
        entry["checks"] = self.checks
        return entry

    def restore(self, key: str, track: Any = None, ledger=None) -> "AllreduceRace":
        from ..ledger import Ledger

        try:
            saved = ((ledger or Ledger()).get(key) or {}).get("checks")
        except Exception:  # noqa: BLE001 - an unreadable ledger restores nothing
            saved = None
        if isinstance(saved, dict):
            for version, problems in saved.items():
                if isinstance(problems, list):
                    self.checks.setdefault(str(version), [str(p) for p in problems])
        if self.student and self.student_check is None:
            self.student_check = self.checks.get(self.student["version"])
        return super().restore(key, track=track, ledger=ledger)

    def run_measurement(self, values: dict) -> dict:
        from course.launch import bench

        if self.student and self.student_check is None:  # checked first: a wrong ring is left out of the race
            self._run_check()
            self.show_progress(0, 1)
        ranks = int(values["ranks"])
        student = self.student if self.student and self.student_check == [] else None
        result = self.launch(bench.allreduce_sweep, list(SIZES), list(self.algorithms), int(values["repeats"]), 1,
                             student, ranks=ranks)
        if not result.ok:
            return {"error": result.reason}
        data = result.values[0]
        return {"sizes": list(SIZES), "warmup": 1, "correct": data["correct"],
                "samples": {name: np.asarray(t).tolist() for name, t in data["seconds"].items()},
                **self._machine(result, ranks)}

    def fitted(self):
        """(alpha, bandwidth) for the model: Act I's fit, else the values given, else None."""
        r = getattr(self.model_bench, "result", None) or {}
        if r.get("latency") is not None and r.get("bandwidth"):
            return float(r["latency"]), float(r["bandwidth"]), bool(r.get("trusted"))
        if self.alpha is not None and self.bandwidth is not None:
            return float(self.alpha), float(self.bandwidth), True
        return None

    def refresh(self, v):
        if self.student_check:
            self.check_box.value = ("<div class='course-ui' role='status'><b>Your ring is not right yet</b> (left out of "
                                    "the race):<ul>" + "".join(f"<li>{html.escape(p)}</li>" for p in self.student_check[:5])
                                    + "</ul></div>")
            self.flag("your_ring_is_wrong", f"Your ring gave a wrong sum: {self.student_check[0]}")
        elif self.student and self.student_check is None:
            self.check_box.value = ("<div class='course-ui' role='status'>Your ring is checked (on awkward lengths, "
                                    "dtypes and rank counts) when you measure.</div>")
        elif self.student:
            self.check_box.value = ("<div class='course-ui' role='status'><b>Your ring is right</b> on lengths 1, 5, 12 "
                                    "and 1001, float64, float32 and int64, on 2 and 3 ranks.</div>")
        else:
            self.check_box.value = ""
        record = self.measured(v)
        if record is None:
            if self.last_launch_reason:
                self.flag("measurement_failed", f"The measurement did not finish: {self.last_launch_reason}")
            else:
                self.table.value = NOT_MEASURED
            # another configuration's lines (and their legend) and numbers would pass for these settings': hide them
            self.clear_readouts()
            for mark in (self.measured_lines, self.model_lines):
                self.set_marks(mark, visible=False, display_legend=False)
            self.set_marks(self.bound, visible=False)
            return {"measured": False, **self._settings(v)}
        sizes = np.asarray(record["sizes"], dtype=float)
        names = list(self.algorithms) + ["yours"]
        medians = {}
        y = np.full((len(names), sizes.size), np.nan)
        for i, name in enumerate(names):
            if name in record["samples"]:
                medians[name] = core.timing_summary(record["samples"][name], warmup=int(record.get("warmup", 1))).median
                y[i] = medians[name]
        self._set_rows(self.measured_lines, names, y)
        ranks = int(record["ranks"])
        fitted = self.fitted()
        model_y = np.full_like(y, np.nan)
        out = {"ranks": ranks, "cores": record["cores"], "load": record["load"],
               "medians": {k: m.tolist() for k, m in medians.items()}, "sizes": sizes.tolist(),
               "correct": record.get("correct", {})}
        if fitted:
            alpha, bandwidth, trusted = fitted
            for i, name in enumerate(names):
                if name in medians:
                    model_y[i] = core.allreduce_time(sizes, ranks, bandwidth, alpha, CORE_NAME[name])
            predicted = float(core.crossover_message_bytes(ranks, bandwidth, alpha, "recursive_doubling", "ring"))
            out.update(alpha=alpha, bandwidth=bandwidth, crossover_model=predicted)
            if not trusted:
                self.flag("untrusted_model", "The α and β of Act I come from a fit that cannot be trusted: the "
                          "dashed model curves are only as good as that fit.", severity="warning")
            if self.show_bound:
                bound = np.asarray(core.allreduce_time(sizes, ranks, bandwidth, 0.0, "ring"))
                self.set_marks(self.bound, y=bound, visible=True)
                mine = "yours" if "yours" in medians else "ring"
                share = float(bound[-1] / medians[mine][-1])
                out.update(bound_seconds=bound.tolist(), bound_share=share, bound_of=mine)
                self.set_card("bound", f"{share:.0%}", f"{algorithm_label(mine)} at {fmt_bytes(sizes[-1])}: "
                              f"{fmt_time(medians[mine][-1])} vs bound {fmt_time(bound[-1])}")
            else:
                self.set_card("bound", "—", "Act III draws the bound")
        else:
            self.set_card("bound", "—", "needs Act I's fit (measure the bench first)")
        self._set_rows(self.model_lines, names, model_y, " (model)")
        if "ring" in medians and "recursive_doubling" in medians:
            measured = core.measured_crossover(sizes, medians["recursive_doubling"], medians["ring"])
            out["crossover_measured"] = measured
            said = fmt_bytes(measured) if 0 < measured < np.inf else ("ring from the smallest size" if measured == 0
                                                                        else "never in this range")
            model_said = fmt_bytes(out["crossover_model"]) if fitted and np.isfinite(out["crossover_model"]) else "n/a"
            self.set_card("crossover", said, f"model: {model_said}")
        else:
            self.set_card("crossover", "—", "needs ring and recursive doubling")
        small = min(medians, key=lambda k: medians[k][0])
        large = min(medians, key=lambda k: medians[k][-1])
        out.update(fastest_small=small, fastest_large=large)
        self.set_card("fastest_small", algorithm_label(small), fmt_time(medians[small][0]))
        self.set_card("fastest_large", algorithm_label(large), fmt_time(medians[large][-1]))
        self.set_card("machine", f"{ranks} ranks", f"{record['cores']} cores, load {record['load']:.1f}")
        wrong = [algorithm_label(k) for k, ok in record.get("correct", {}).items() if not ok]
        if wrong:
            self.flag("wrong_sum", f"{', '.join(wrong)} gave a wrong sum during the race.")
        self.flag_machine(record)
        self._log_axes(self.fig, np.concatenate([y[np.isfinite(y)], model_y[np.isfinite(model_y)]]))
        self.set_math("Model (dashed), from course.core.allreduce_time with your α, β: ring 2(p−1)α + 2(p−1)/p·nβ; "
                      "recursive doubling ⌈lg p⌉(α + nβ); binomial tree 2⌈lg p⌉(α + nβ); MPI's Allreduce drawn as "
                      "Rabenseifner 2⌈lg p⌉α + 2(p−1)/p·nβ. Predicted crossover of recursive doubling and ring: "
                      "n* = (a_ring − a_rd)·α / ((b_rd − b_ring)·β) (course.core.crossover_message_bytes).")
        rows = "".join("<tr><td>" + fmt_bytes(n) + "</td>" + "".join(f"<td>{fmt_time(medians[k][i])}</td>" for k in medians)
                       + "</tr>" for i, n in enumerate(sizes))
        head = "".join(f"<th>{html.escape(algorithm_label(k))}</th>" for k in medians)
        self.table.value = ("<details class='course-ui'><summary>Measured medians as a table</summary><table><thead><tr>"
                            f"<th>size</th>{head}</tr></thead><tbody>{rows}</tbody></table></details>")
        return out

    def describe(self, fig):
        r = self.result
        if not r:
            return super().describe(fig)
        if not r.get("medians"):  # nothing measured for these settings: say so, with the settings, not a KeyError
            return self.describe_unmeasured(fig, r)
        parts = [f"Chart: measured all-reduce time against message size on {r['ranks']} ranks, log-log."]
        for name, med in r["medians"].items():
            parts.append(f"{algorithm_label(name)}: {fmt_time(med[0])} at {fmt_bytes(r['sizes'][0])}, "
                         f"{fmt_time(med[-1])} at {fmt_bytes(r['sizes'][-1])}.")
        if "crossover_measured" in r:
            parts.append(f"Measured crossover of recursive doubling and ring: {fmt_bytes(r['crossover_measured'])}.")
        return " ".join(parts)
