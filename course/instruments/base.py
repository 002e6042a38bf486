"""The pattern every instrument follows (read this before writing one).

An instrument is a small class with four parts:

1. **Controls**: ipywidgets registered by name in ``Instrument.build``
   with :meth:`add_control`; tests and notebooks reach them as
   ``inst.controls["gpus"]`` and drive the instrument by setting ``.value``.
2. **Charts**: bqplot ``Figure`` objects with their ``Marks`` and ``Scales``,
   built ONCE in ``build``. They are never rebuilt: an update assigns new
   arrays to mark traits (``mark.x``, ``mark.y``...) through :meth:`set_marks`.
3. **Readouts**: metric cards (:meth:`add_card` / :meth:`set_card`), a "math
   peek" showing the governing equation with the current numbers substituted
   (``set_math``), and failure banners (:meth:`flag`).
4. **Result**: ``refresh`` receives the current control values, calls the
   core ONCE (vectorized: a whole curve per call, not a Python loop), updates
   marks, cards and math peek, flags failure states, and returns a plain dict
   of the numbers shown. That dict becomes ``inst.result``; the active failure
   codes become ``inst.failures``.

No physics lives in an instrument: every number comes from ``course.core``.
Formatting (``fmt_time``, ``fmt_bytes``) and choosing which core result to
show are the instrument's job.

Robustness contract: :meth:`update` wraps ``refresh``. A ``ValueError`` from
the core becomes the failure ``"invalid_input"`` with the core's message; any
other exception becomes ``"instrument_error"`` (traceback kept in
``inst.last_traceback``). Either way the instrument stays alive and shows a
banner, never a traceback. Several controls can be changed with one update
inside ``with inst.batch(): ...``.

Minimal example (a real instrument passes a core function, not ``np.square``)::

    class Square(Instrument):
        title = "Square"

        def build(self):
            self.add_control("x", widgets.FloatSlider(value=2, min=0, max=10))
            xs = bq.LinearScale(); ys = bq.LinearScale()
            self.curve = bq.Lines(x=[0.0], y=[0.0], scales={"x": xs, "y": ys})
            self.add_figure(figure([self.curve], xs, ys, "x", "x squared"))
            self.add_card("value", "x squared")

        def refresh(self, v):
            grid = np.linspace(0, v["x"], 64)
            self.set_marks(self.curve, x=grid, y=np.square(grid))
            self.set_card("value", f"{v['x'] ** 2:.3g}")
            self.set_math(f"y = x<sup>2</sup> = {v['x']:.3g}<sup>2</sup>")
            return {"y": v["x"] ** 2}
"""

from __future__ import annotations

import contextlib
import html
import math
import time
import traceback
from typing import Any, Iterator

import bqplot as bq
import ipywidgets as widgets
import numpy as np

from ..theme import theme_css
from .cards import banner_html, metric_card_html
from .charts import describe_figure, legend_html
from .controls import LogFloatSlider, LogIntSlider, ControlNames

__all__ = ["Instrument", "Card", "figure", "same_value", "to_plain", "fmt_time", "fmt_bytes", "fmt_rate", "fmt_memory"]


# -- formatting (not physics) ---------------------------------------------------
def fmt_time(seconds: float) -> str:
    """Human time: '1.23 s', '4.5 ms', '12 us', '3.2 min'.

    >>> fmt_time(0.0045), fmt_time(12e-6), fmt_time(200.0)
    ('4.5 ms', '12 µs', '3.33 min')
    """
    if seconds is None or not math.isfinite(seconds):
        return "n/a"
    a = abs(seconds)
    if a >= 3600:
        return f"{seconds / 3600:.3g} h"
    if a >= 120:
        return f"{seconds / 60:.3g} min"
    if a >= 1:
        return f"{seconds:.3g} s"
    if a >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    if a >= 1e-6:
        return f"{seconds * 1e6:.3g} µs"
    if a == 0:
        return "0 s"
    return f"{seconds * 1e9:.3g} ns"


def fmt_bytes(n: float) -> str:
    """Decimal (SI) bytes: '280 GB', '1 MB'.

    >>> fmt_bytes(280e9), fmt_bytes(1e6), fmt_bytes(512)
    ('280 GB', '1 MB', '512 B')
    """
    if n is None or not math.isfinite(n):
        return "n/a"
    for unit, size in (("PB", 1e15), ("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(n) >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:.3g} B"


def fmt_memory(accelerator) -> str:
    """An accelerator's memory as every instrument writes it: one figure, the bytes a process can allocate
    (``memory_capacity``, the planner's out-of-memory line) in GB = 10⁹ bytes; the vendor's rounded name
    ("80 GB") is explained once, by :attr:`~course.core.catalog.Accelerator.memory_name`.

    >>> from course.core import catalog
    >>> fmt_memory(catalog.accelerator("H100")), fmt_memory(catalog.accelerator("A100"))
    ('85.5 GB', '80 GB')
    """
    return fmt_bytes(float(accelerator.memory_capacity))


def fmt_rate(bytes_per_s: float) -> str:
    """'50 GB/s'."""
    return fmt_bytes(bytes_per_s) + "/s"


def same_value(old: Any, new: Any) -> bool:
    """Whether assigning ``new`` over ``old`` would change nothing: equal shapes and values, NaN equal to NaN.

    >>> same_value(np.array([1.0, np.nan]), [1, float("nan")]), same_value([1, 2], [1, 2, 3]), same_value("a", "a")
    (True, False, True)
    """
    if old is new:
        return True
    if old is None or new is None:
        return False
    try:
        a, b = np.asarray(old), np.asarray(new)
        if a.shape != b.shape:
            return False
        if a.dtype.kind in "biuf" and b.dtype.kind in "biuf":
            return bool(np.array_equal(a, b, equal_nan=True))
        if a.dtype.kind in "biuf" or b.dtype.kind in "biuf":  # numbers against text
            return False
        return bool(np.array_equal(a, b))
    except Exception:  # noqa: BLE001 - not comparable: assign it
        return False


def to_plain(value: Any) -> Any:
    """Convert NumPy scalars/arrays (nested in dicts/lists) to plain Python values."""
    if isinstance(value, dict):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return to_plain(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    return value


class Card:
    """One metric card of an instrument: its name, label and current HTML (``value``).

    Not a widget: an instrument's cards are drawn together in one ``widgets.HTML``
    (:attr:`Instrument.cards`), each in a ``course-card-<name>`` slot, so an
    update that changes every card sends one message.
    """

    __slots__ = ("name", "_course_label", "value")

    def __init__(self, name: str, label: str):
        self.name = name
        self._course_label = label
        self.value = metric_card_html(label, "…")

    def __repr__(self) -> str:
        return f"Card({self.name!r}, {self._course_label!r})"


def figure(marks: list, x_scale, y_scale, x_label: str, y_label: str, *, title: str = "",
           x_tick_format: str | None = None, y_tick_format: str | None = None,
           height: str = "300px", legend: bool | str = False, **kw) -> bq.Figure:
    """A bqplot Figure with two labelled axes (built once per instrument).

    ``legend=True`` lists the marks that say ``display_legend`` in a legend under
    the figure (an instrument shows it, ``course.instruments.charts.legend_html``):
    a legend inside the plot covers curves. ``legend="inside"`` keeps bqplot's legend
    box, drawn in the JupyterLab theme's colours (bqplot's default is a white box,
    unreadable in the Dark theme).
    """
    below = []
    if legend == "inside":
        kw.setdefault("legend_style", {"fill": "var(--jp-layout-color1)", "stroke": "var(--jp-border-color1)"})
        kw.setdefault("legend_text", {"fill": "var(--jp-ui-font-color0)"})
    elif legend:
        below = [mark for mark in marks if mark.display_legend]
        for mark in below:
            mark.display_legend = False
    x_axis = bq.Axis(scale=x_scale, label=x_label, tick_format=x_tick_format)
    y_axis = bq.Axis(scale=y_scale, label=y_label, side="left", tick_format=y_tick_format,
                     label_offset="50px")
    fig = bq.Figure(
        marks=marks, axes=[x_axis, y_axis], title=title, animation_duration=0,
        fig_margin={"top": 40, "bottom": 50, "left": 70, "right": 20},
        layout=widgets.Layout(height=height, min_width="320px", flex="1 1 420px"),
        legend_location="top-left", **kw,
    )
    fig._course_legend_marks = below  # type: ignore[attr-defined]
    return fig


class Instrument:
    """Base class: controls + charts built once, one core call per change, failure banners.

    Subclasses set ``title`` (and optionally ``subtitle``) and implement
    ``build`` and ``refresh``. Keyword arguments of the constructor
    set initial control values by name (``AllreduceComparator(gpus=64)``).
    """

    title: str = "Instrument"
    subtitle: str = ""

    def __init__(self, **initial: Any):
        self.controls: dict[str, widgets.Widget] = {}
        self.figures: list[bq.Figure] = []
        self.result: dict = {}
        self.failures: list[str] = []
        self.failure_messages: dict[str, str] = {}
        self.failures_seen: set[str] = set()
        #: failure states an earlier session hit, taken back from the design ledger (:meth:`restore`)
        self.failures_restored: set[str] = set()
        self.saved_key: str | None = None
        self.saved_ledger = None
        self.last_traceback: str | None = None
        self.update_count = 0
        self.last_update_seconds = 0.0
        self._cards: dict[str, Card] = {}
        self._pending: dict[str, tuple[str, str]] = {}
        self._suspended = 0
        self._updating = False
        #: every metric card in one widget: an update that changes five cards sends one message, not five
        self.cards = widgets.HTML(layout=widgets.Layout(width="100%"))
        self.cards.add_class("course-card-row")

        self.banner = widgets.HTML(layout=widgets.Layout(width="100%"))
        self.math_peek = widgets.HTML()
        self.extra = widgets.VBox()  # room for subclass-specific widgets (legend, notes)
        self.extra.add_class("course-extra")
        #: per figure: its legend under the plot and its text alternative (what it shows, in words)
        self.figure_legends: dict[int, widgets.HTML] = {}
        self.figure_texts: dict[int, widgets.HTML] = {}
        self.build()
        unknown = set(initial) - set(self.controls)
        if unknown:
            raise ValueError(f"unknown control(s) {sorted(unknown)}; known: {sorted(self.controls)}")
        for name, value in initial.items():
            self.controls[name].value = value
        for control in self.controls.values():
            if control._course_triggers_update:  # type: ignore[attr-defined]
                control.observe(self._on_change, names="value")
        self.widget = self._layout()
        self.widget.add_class("course-instrument")
        self.update()

    # -- to implement -----------------------------------------------------------
    def build(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def refresh(self, values: dict[str, Any]) -> dict:  # pragma: no cover - abstract
        raise NotImplementedError

    # -- building helpers -------------------------------------------------------
    def add_control(self, name: str, control: widgets.Widget, *, triggers_update: bool = True) -> widgets.Widget:
        """Register a control by name. ``triggers_update=False`` for controls that
        only steer other controls (a preset picker), so one change = one update."""
        control.add_class(f"course-control-{name}")
        control._course_triggers_update = triggers_update  # type: ignore[attr-defined]
        self.controls[name] = control
        return control

    def add_figure(self, fig: bq.Figure) -> bq.Figure:
        self.figures.append(fig)
        return fig

    def add_card(self, name: str, label: str) -> "Card":
        """A metric card, shown in the instrument's row of cards (all cards are one widget: one message)."""
        card = Card(name, label)
        self._cards[name] = card
        self._render_cards()
        return card

    def _render_cards(self) -> None:
        """Send the row of cards if a card changed: one message for every card of an update."""
        new = "<div class='course-cards' style='display:flex;flex-flow:row wrap;align-items:stretch'>" + "".join(
            f"<div class='course-card-slot course-card-{card.name}'>{card.value}</div>"
            for card in self._cards.values()) + "</div>"
        if self.cards.value != new:
            self.cards.value = new

    def observe(self, name: str, handler) -> None:
        """Run ``handler(change)`` when control ``name`` changes (presets, linked ranges).

        Like :meth:`update`, it never lets an exception reach the browser: a
        failure becomes the ``instrument_error`` banner.
        """
        def guarded(change):
            try:
                handler(change)
            except Exception as exc:  # noqa: BLE001 - shown as a banner instead of a traceback
                self._show_error(exc, "apply this change")

        self.controls[name].observe(guarded, names="value")

    def _show_error(self, exc: Exception, action: str) -> None:
        """Show ``exc`` (raised outside :meth:`update`) as the ``instrument_error`` banner; call in ``except``."""
        self.last_traceback = traceback.format_exc()
        self.failures = ["instrument_error"]
        self.failure_messages = {"instrument_error": f"{type(exc).__name__}: {exc}"}
        self.failures_seen.add("instrument_error")
        self.banner.value = banner_html("instrument_error", f"The instrument could not {action} "
                                        f"({type(exc).__name__}: {exc}).")

    # -- refresh helpers --------------------------------------------------------
    def set_marks(self, mark: bq.Mark, **data: Any) -> None:
        """Assign new data arrays to one mark, sending one message (none when nothing changed).

        Traits that already hold the value are left alone: a NaN-broken series
        (``course.instruments.charts.segments``) never compares equal to itself
        in traitlets, and every re-sent array is a redraw in the browser.
        """
        changed = {trait: value for trait, value in data.items() if not same_value(getattr(mark, trait), value)}
        if not changed:
            return
        with mark.hold_sync():
            for trait, value in changed.items():
                setattr(mark, trait, value)

    def set_card(self, name: str, value: str, detail: str = "", tone: str = "normal", label: str | None = None) -> None:
        """Change one card (and its ``label``, if given); inside :meth:`update` the row is sent once, at the end."""
        card = self._cards[name]
        if label is not None:
            card._course_label = label
        card.value = metric_card_html(card._course_label, value, detail, tone)
        if not self._updating:
            self._render_cards()

    def set_math(self, html_text: str) -> None:
        new = f"<div class='course-math-peek'>{html_text}</div>"
        if self.math_peek.value != new:
            self.math_peek.value = new

    def flag(self, code: str, message: str, severity: str = "error") -> None:
        """Declare a failure state for this update (shown as a banner)."""
        self._pending[code] = (message, severity)

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Change several controls with a single update at the end."""
        self._suspended += 1
        try:
            yield
        finally:
            self._suspended -= 1
            if not self._suspended:
                self.update()

    # -- the update loop ----------------------------------------------------------
    def values(self) -> dict[str, Any]:
        return {name: control.value for name, control in self.controls.items()}

    def _on_change(self, _change: dict) -> None:
        if not self._suspended:
            self.update()

    def update(self) -> None:
        """Recompute from the controls; never raises."""
        start = time.perf_counter()
        self._pending = {}
        unsupported = self.track_unsupported(self.track) if self.track is not None else None
        self._updating = True
        try:
            if unsupported:  # a banner, not numbers computed for hardware the track does not have
                self.flag("track_not_modelled", unsupported)
                result = {}
            else:
                result = self.refresh(self.values())
            self.result = to_plain(result or {})
            self.last_traceback = None
        except ValueError as exc:
            self.result = {}
            self.flag("invalid_input", f"These settings are outside what the model accepts: {exc}")
        except Exception as exc:  # the instrument must survive anything the core throws
            self.result = {}
            self.last_traceback = traceback.format_exc()
            self.flag("instrument_error", f"The instrument could not compute this case ({type(exc).__name__}: {exc}).")
        finally:
            self._updating = False
        self._render_cards()
        self.failures = list(self._pending)
        self.failure_messages = {code: msg for code, (msg, _sev) in self._pending.items()}
        if not self.gated:  # a student hits only the failure states of an instrument they can see
            self.failures_seen.update(self.failures)
        new_banner = "".join(banner_html(code, msg, sev) for code, (msg, sev) in self._pending.items())
        if self.banner.value != new_banner:
            self.banner.value = new_banner
        # no result: the charts and cards still hold the last valid case's numbers, which are not this case's
        self._show_readouts("track_not_modelled" not in self._pending and (bool(self.result) or not self._pending))
        self._describe_figures()
        self.update_count += 1
        self.last_update_seconds = time.perf_counter() - start

    # -- charts in words -----------------------------------------------------------
    def describe(self, fig: bq.Figure) -> str:
        """What ``fig`` shows now, in words (its text alternative); override to lead with the point."""
        return describe_figure(fig)

    def _describe_figures(self) -> None:
        for fig in self.figures:
            text_widget = self.figure_texts.get(id(fig))
            if text_widget is None:
                continue
            try:
                text = self.describe(fig) if self.result or not self.failures else (
                    f"Chart: {fig.title}. No data: " + " ".join(self.failure_messages.values()))
            except Exception as exc:  # noqa: BLE001 - a description must never break the instrument
                text = f"Chart: {fig.title}. (No description: {type(exc).__name__}.)"
            new = f"<div class='course-chart-text course-sr-only'>{html.escape(text)}</div>"
            if text_widget.value != new:
                text_widget.value = new
            legend = self.figure_legends.get(id(fig))
            if legend is not None:
                new_legend = legend_html(getattr(fig, "_course_legend_marks", []))
                if legend.value != new_legend:
                    legend.value = new_legend

    def _show_readouts(self, shown: bool) -> None:
        """Hide the cards, charts and math peek while they would show numbers of another context."""
        if not hasattr(self, "_readouts"):
            return
        display = None if shown else "none"
        for box in self._readouts:
            if box.layout.display != display:
                box.layout.display = display
        # and out of the body while hidden: a figure updated inside a hidden box is drawn with no size (see set_gated)
        wanted = tuple(c for c in self._body_children if shown or c not in self._readouts)
        if tuple(self._body.children) != wanted:
            self._body.children = wanted

    # -- context/track ------------------------------------------------------------
    #: Track currently applied (``None`` until :meth:`apply_track`; Cloud is the default context).
    track: Any = None
    #: Which control takes which part of a track (:meth:`apply_track`): ``"link"`` (a
    #: Dropdown of catalog links), ``"devices"`` (the track's fleet size; its label says
    #: "Devices"), ``"gradient_gb"`` (the track model's FP32 gradients, in GB).
    track_controls: dict[str, str] = {"link": "link"}

    def track_unsupported(self, track: Any) -> str | None:
        """Why this instrument cannot represent ``track`` (``None``: it can).

        Instruments built around GPU clusters override this; the message is
        shown as the ``track_not_modelled`` banner and ``result`` stays empty.
        """
        return None

    def apply_track(self, track: Any) -> None:
        """Switch to a track's hardware: its link goes into a ``link`` control, if any.

        Cloud (or ``None``) restores the values the instrument was built with.
        The whole switch is one update; instruments with more context
        (accelerator, model) extend this.
        """
        if not hasattr(self, "_cloud_values"):
            self._cloud_values = self.values()
            # a LogIntSlider keeps the stops it gained (its max cannot shrink back); a LogFloatSlider's range is fixed
            self._cloud_ranges = {name: (c.description, None if isinstance(c, (LogIntSlider, LogFloatSlider))
                                         else getattr(c, "max", None))
                                  for name, c in self.controls.items()}
            self._cloud_options = {name: c.options for name, c in self.controls.items()
                                   if name == self.track_controls.get("link")}
        is_cloud = track is None or getattr(track, "name", None) == "Cloud"
        with self.batch():
            self.track = None if is_cloud else track
            if is_cloud:
                for name, (description, maximum) in self._cloud_ranges.items():
                    self.controls[name].description = description
                for name, options in self._cloud_options.items():
                    self.controls[name].options = options
                for name, value in self._cloud_values.items():
                    self.controls[name].value = value
                for name, (_description, maximum) in self._cloud_ranges.items():
                    if maximum is not None:
                        self.controls[name].max = maximum
                return
            self._apply_track_roles(track)

    def _apply_track_roles(self, track: Any) -> None:
        roles = {role: self.controls[name] for role, name in self.track_controls.items() if name in self.controls}
        link = getattr(track, "link", None)
        if "link" in roles and link is not None:
            from .context import TRACK_LINKS, link_options
            names = TRACK_LINKS.get(getattr(track, "name", None))
            if names:
                roles["link"].options = link_options((link.name,) + tuple(n for n in names if n != link.name))
            for _label, option in getattr(roles["link"], "options", ()):
                if option == link or getattr(option, "name", None) == getattr(link, "name", object()):
                    roles["link"].value = option
                    break
        devices = getattr(track, "devices", None)
        if "devices" in roles and devices:
            control = roles["devices"]
            control.max = max(control.max, int(devices))  # a fleet may outnumber a GPU cluster
            control.value = int(devices)
            control.description = "Devices N"
        model = getattr(track, "model", None)
        if "gradient_gb" in roles and model is not None:
            from ..core import memory, units  # FP32: PyTorch's default dtype for on-device training
            roles["gradient_gb"].value = float(model.params) * memory.precision_bytes("fp32") / units.GB

    def follow(self, selector) -> "Instrument":
        """Follow a ``course.instruments.context.TrackSelector``: apply its track now and on change."""
        self.apply_track(selector.track)

        def switch(_name):
            try:
                self.apply_track(selector.track)
            except Exception as exc:  # noqa: BLE001 - a banner on this instrument, never a traceback
                self._show_error(exc, f"switch to the {selector.value} track")

        selector.observe(switch)
        return self

    # -- gating, display, ledger --------------------------------------------------
    def set_gated(self, gated: bool) -> None:
        """Hide and disable the instrument until a prediction lock is locked.

        Failure states count as hit (``failures_seen``, the HUD's "failure states hit") only while the
        instrument shows: a lab gates an instrument right after building it, before the cell shows it,
        so what its first update flagged was never on screen; the failures it shows when the lock opens are.
        """
        if gated:
            self.failures_seen.clear()
        else:
            self.failures_seen.update(self.failures)
        self._body.layout.display = "none" if gated else None
        self._gate_note.layout.display = None if gated else "none"
        # a gated body leaves the panel, not only the screen: bqplot lays a figure out when it is drawn, and a figure
        # drawn inside a hidden box has no size (a <rect> of negative height, translate(undefined), dozens of console
        # errors per Run All); out of the panel, its views are created only once the lock opens
        panel = getattr(self, "_panel", None)
        if panel is not None:
            wanted = tuple(c for c in self._panel_children if c is not (self._body if gated else self._gate_note))
            if tuple(panel.children) != wanted:
                panel.children = wanted
        for control in self.controls.values():
            if hasattr(control, "disabled"):
                with control.hold_sync():
                    control.disabled = gated
                    if isinstance(control, widgets.ToggleButtons):
                        # ipywidgets 8.1's ToggleButtonsView applies `disabled` to its buttons only when it
                        # rebuilds them, which it skips when the labels read "0", "1", ... (the ZeRO stages):
                        # those stayed disabled in the browser after the lock. A change of `icons` forces the
                        # rebuild; blank icon names draw nothing.
                        control.icons = [] if control.icons else [""] * len(control.options)

    @property
    def gated(self) -> bool:
        body = getattr(self, "_body", None)  # the first update runs before the layout exists
        return body is not None and body.layout.display == "none"

    def _layout(self) -> widgets.VBox:
        head = widgets.HTML(
            f"{theme_css()}<div class='course-title'>{html.escape(self.title)}</div>"
            + (f"<div class='course-subtitle'>{html.escape(self.subtitle)}</div>" if self.subtitle else "")
        )
        self._gate_note = widgets.HTML(
            "<div class='course-gated-note course-tone-warn'>"
            "Lock your prediction above to unlock this instrument.</div>",
            layout=widgets.Layout(display="none"),
        )
        # a control with an entry box (LogFloatSlider) is laid out with it
        controls = widgets.HBox([getattr(c, "course_box", c) for c in self.controls.values()],
                                layout=widgets.Layout(flex_flow="row wrap", align_items="center"))
        controls.add_class("course-controls")  # what ControlNames watches
        cards = widgets.HBox([self.cards], layout=widgets.Layout(flex_flow="row wrap"))
        charts = widgets.HBox([self._chart_box(fig) for fig in self.figures],
                              layout=widgets.Layout(flex_flow="row wrap", width="100%"))
        peek = widgets.Accordion(children=[self.math_peek], titles=("Math peek",), selected_index=0)
        self._readouts = (cards, charts, self.extra, peek)
        self._body_children = (controls, self.banner, cards, charts, self.extra, peek)
        self._body = widgets.VBox(list(self._body_children))
        self._panel_children = (head, self._gate_note, self._body, ControlNames())
        box = widgets.VBox([c for c in self._panel_children if c is not self._gate_note],
                           layout=widgets.Layout(padding="8px", margin="6px 0"))
        box.add_class("course-panel")
        self._panel = box
        return box

    def _chart_box(self, fig: bq.Figure) -> widgets.VBox:
        """The figure, its legend under it and its text alternative, sized as the figure was in the row."""
        legend = widgets.HTML()
        legend.add_class("course-figure-legend")
        text = widgets.HTML()
        text.add_class("course-figure-text")
        self.figure_legends[id(fig)] = legend
        self.figure_texts[id(fig)] = text
        box = widgets.VBox([fig, legend, text], layout=widgets.Layout(
            flex=fig.layout.flex or "1 1 420px", min_width=fig.layout.min_width or "320px"))
        fig.layout.flex = "0 0 auto"  # in the column its flex basis would set the height
        box.add_class("course-chart")
        return box

    def display(self) -> None:
        from IPython.display import display

        display(self.widget)

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)

    def ledger_entry(self) -> dict:
        """Plain data for the design ledger: configuration, result, failure states hit (those of this
        kernel and those :meth:`restore` took back from the ledger)."""
        config = {}
        for name, value in self.values().items():
            if isinstance(value, (int, float, str, bool, np.generic)) or value is None:
                config[name] = to_plain(value)
            else:  # catalog objects (links, models) are recorded by name
                config[name] = str(getattr(value, "name", value))
        hit = self.failures_seen | self.failures_restored
        return {"configuration": config, "result": self.result, "failures_hit": sorted(hit)}

    def restore(self, key: str, track: Any = None, ledger=None) -> "Instrument":
        """Take back what the design ledger holds under ``key``, as a lock takes back its prediction:
        the failure states already hit (kept, whatever this kernel shows) and the saved configuration
        (unless it was saved on another track than ``track``'s). Run All and a restart then show the
        student's design instead of saving the defaults over it. Returns ``self``.

        A control whose saved value it no longer accepts keeps its value; nothing here raises."""
        from ..ledger import Ledger

        self.saved_key, self.saved_ledger = key, ledger
        try:
            entry = (ledger or Ledger()).get(key) or {}
        except Exception:  # noqa: BLE001 - an unreadable ledger restores nothing
            entry = {}
        hit = entry.get("failures_hit")
        self.failures_restored = {str(f) for f in hit} if isinstance(hit, list) else set()
        saved_track, current = entry.get("track"), getattr(track, "value", track)
        config = entry.get("configuration")
        if isinstance(config, dict) and (saved_track is None or current is None or saved_track == current):
            self._apply_configuration(config)
        return self

    def _apply_configuration(self, config: dict) -> None:
        """Set each control to its value in ``config`` (catalog objects are saved by name), as one update.
        Twice: a control that steers others (a preset, a model) may have moved one set before it."""
        def wanted(control, saved):
            options = getattr(control, "options", None)
            if options is None:
                return saved
            for option in options:
                value = option[1] if isinstance(option, tuple) and len(option) == 2 else option
                if value == saved or str(getattr(value, "name", value)) == str(saved):
                    return value
            raise KeyError(saved)

        with self.batch():
            for _ in range(2):
                for name, saved in config.items():
                    control = self.controls.get(name)
                    if control is None or not control._course_triggers_update:  # a preset: its targets are saved
                        continue
                    try:
                        value = wanted(control, saved)
                        if control.value != value:
                            control.value = value
                    except Exception:  # noqa: BLE001 - an option or range that no longer exists
                        continue

    def record(self, key: str | None = None, ledger=None, **extra: Any) -> dict:
        """Save :meth:`ledger_entry` (plus ``extra``) under ``key`` (default: the key it was
        restored from) in the design ledger, and return what was saved.

        The ledger only grows: the failure states already stored under ``key`` are kept. An instrument
        still locked behind its prediction saves nothing (returns ``{}``): the student has not used it.
        """
        from ..ledger import Ledger

        key = key or self.saved_key
        if not key:
            raise ValueError("key must name the ledger entry, e.g. 'lab05/design' (or call restore(key) first)")
        if self.gated:
            return {}
        entry = {**self.ledger_entry(), **extra}

        def change(before: dict) -> dict:
            stored = before.get("failures_hit")
            kept = set(stored) if isinstance(stored, list) else set()
            return {**entry, "failures_hit": sorted(kept | set(entry["failures_hit"]))}

        target = ledger or self.saved_ledger or Ledger()
        return {k: v for k, v in target.update(key, change).items() if k not in ("created", "updated")}

