"""Controls the instruments need beyond stock ipywidgets: a log-scale integer slider and slider names.

* :class:`LogIntSlider`: an integer control whose handle steps through powers of
  two (2, 4, ... 4096: a range that spans decades, on a log scale), while any
  whole number set from Python (a student's variant of 136 GPUs, a fleet of
  10,000 cars) is held exactly and becomes one more stop of the slider.
* :class:`LogFloatSlider`: a quantity over decades (a message of 1 kB to 1 TB,
  a checkpoint of 1 s to 50 min) whose handle steps through a 1-1.4-2-3-4-5-7
  series (7 arrow presses per decade, each 25-50 %) plus the presets the labs
  name (140 GB, 350 GB, a 98 s checkpoint), each held exactly; any other number
  set from Python becomes one more stop, until the next one replaces it. Its readout is an entry box
  (``slider.entry``): a number typed there is taken as if set from Python (out of range: clamped and
  said so; not a number: refused with a message in ``slider.note``, never a traceback).
  (ipywidgets' FloatLogSlider steps evenly in log space: a step small enough to
  land on 140 GB and 350 GB moved 0.23 % per arrow press, 1,000 presses a decade.)
* :class:`ControlNames`: ipywidgets 8 draws a slider's handle as a noUiSlider
  ``<div role="slider">`` with no accessible name (its description is a
  separate ``<label>`` bound to nothing), so a screen reader announces
  "slider, 512" and axe-core reports ``aria-input-field-name`` (serious); the
  Play widget's buttons hold only an icon (axe-core: ``button-name``,
  critical). No trait reaches those elements, so this invisible widget runs a
  small front-end module (anywidget) that gives each handle in its instrument
  the ``aria-label`` of its slider's description, the ``aria-valuetext`` of its
  readout (noUiSlider announces a selection slider's index: "53", not "40") and each Play button its
  action, and again whenever a control is redrawn or renamed ("GPUs N" becomes
  "Devices N" on the Edge track). It watches the row of controls and the extra
  widgets (a Play) only: a chart's redraw on every slider move is none of its business.
"""

from __future__ import annotations

import html
import math
import re

import anywidget
import ipywidgets as widgets
import numpy as np
import traitlets

__all__ = ["LogIntSlider", "LogFloatSlider", "ControlNames", "powers_of_two", "log_series", "LOG_MANTISSAS"]


def powers_of_two(low: int, high: int) -> tuple[int, ...]:
    """``low``, the powers of two strictly between, and ``high``.

    >>> powers_of_two(2, 4096)[:4], powers_of_two(2, 4096)[-1], len(powers_of_two(2, 4096))
    ((2, 4, 8, 16), 4096, 12)
    >>> powers_of_two(3, 100)
    (3, 4, 8, 16, 32, 64, 100)
    """
    if not (isinstance(low, int) and isinstance(high, int) and 1 <= low <= high):
        raise ValueError(f"low and high must be whole numbers with 1 <= low <= high, got {low!r}, {high!r}")
    inner = [2 ** k for k in range(math.ceil(math.log2(low)), math.floor(math.log2(high)) + 1)]
    return tuple(sorted({low, high, *inner}))


class _StopSlider(widgets.SelectionSlider):
    """A selection slider over ascending numeric stops: ``stops``, ``min``, ``max``, and new stops in one message."""

    @property
    def stops(self) -> tuple:
        return tuple(self._options_values)

    @property
    def min(self):
        return self.stops[0]

    @property
    def max(self):
        return self.stops[-1]

    def _set_stops(self, stops: tuple) -> None:
        """New stops, keeping the current value selected and sending one message (no detour through the first stop)."""
        current = self._options_values[self.index] if self.index is not None else None
        with self.hold_sync():
            self._initializing_traits_ = True  # ipywidgets otherwise selects the first option on new options
            try:
                self.options = self._labelled(stops)
            finally:
                self._initializing_traits_ = False
            if current is not None and current in stops:
                self.index = stops.index(current)


class LogIntSlider(_StopSlider):
    """Whole numbers from ``min`` to ``max`` on a log scale: the handle steps through powers of two.

    ``value`` accepts any whole number in range (it is added to the stops);
    ``max`` can be raised (a fleet larger than the cluster). ``value`` is an
    ``int``, the readout shows it with thousands separators.

    >>> s = LogIntSlider(value=128, min=2, max=4096, description="GPUs N")
    >>> s.value, s.index, s.label
    (128, 6, '128')
    >>> s.value = 136; s.value, s.stops[7:9]
    (136, (136, 256))
    >>> s.max = 10_000; s.stops[-1], s.max
    (10000, 10000)
    """

    def __init__(self, value: int, min: int, max: int, stops=None, **kwargs):  # noqa: A002 - IntSlider's names
        """``stops``: the values the handle steps through (default: :func:`powers_of_two` from min to max)."""
        stops = tuple(sorted({int(min), int(max), *(int(v) for v in stops if min <= v <= max)})) if stops else \
            powers_of_two(int(min), int(max))
        if value not in stops:
            stops = tuple(sorted({*stops, int(value)}))
        super().__init__(options=self._labelled(stops), value=int(value), **kwargs)

    @staticmethod
    def _labelled(stops) -> tuple:
        return tuple((f"{v:,}", v) for v in stops)

    @property
    def max(self) -> int:
        return self.stops[-1]

    @max.setter
    def max(self, high: int) -> None:  # a fleet larger than the cluster raises it
        high = int(high)
        if high > self.max:
            self._set_stops(tuple(sorted({*self.stops, *powers_of_two(self.max, high)})))

    @traitlets.validate("value")
    def _validate_value(self, proposal):
        value = proposal.value
        if value is None:
            raise traitlets.TraitError("value must be a whole number, got None")
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or not self.min <= value <= self.max:
            raise traitlets.TraitError(f"value must be a whole number from {self.min} to {self.max}, got {value!r}")
        if value not in self._options_values:
            self._set_stops(tuple(sorted({*self.stops, value})))
        return value


#: Stops of a :class:`LogFloatSlider` in each decade: 1, 1.4, 2, 3, 4, 5, 7 (x 10^k). Each arrow press
#: changes the value by 25 % to 50 %; 7 presses cross a decade. 1.4 holds 140 GB (the comparator's default)
#: and 14 GB (7B bf16 gradients), 4 a 4 MB update.
LOG_MANTISSAS = ("1", "1.4", "2", "3", "4", "5", "7")
#: A preset or a number set from Python replaces the series stops within this factor of it, so that no arrow
#: press moves by less than ~10 % (98 s replaces 100 s: 70, 98, 140, not 70, 98, 100, 140).
CROWDED = 1.1
#: A number within this relative distance of a stop is that stop (float noise: 14.000000000000002 is 14).
SAME = 1e-9


def log_series(low: float, high: float, mantissas=LOG_MANTISSAS) -> tuple[float, ...]:
    """``mantissa x 10^k`` for every ``k`` and mantissa between ``low`` and ``high`` (both included).

    Each stop is the float nearest its decimal (``float("1.4e2") == 140.0``, not ``1.4 * 100``).

    >>> log_series(1.0, 100.0)
    (1.0, 1.4, 2.0, 3.0, 4.0, 5.0, 7.0, 10.0, 14.0, 20.0, 30.0, 40.0, 50.0, 70.0, 100.0)
    >>> log_series(0.0004, 0.003)
    (0.0004, 0.0005, 0.0007, 0.001, 0.0014, 0.002, 0.003)
    """
    if not (0 < low < high and math.isfinite(high)):
        raise ValueError(f"low and high must be positive with low < high, got {low!r}, {high!r}")
    stops = {float(low), float(high)}
    for k in range(math.floor(math.log10(low)) - 1, math.ceil(math.log10(high)) + 1):
        stops.update(v for m in mantissas if low <= (v := float(f"{m}e{k}")) <= high)
    return tuple(sorted(stops))


def stop_label(value: float) -> str:
    """A readout: up to 6 significant digits, never an exponent, thousands separated.

    >>> [stop_label(v) for v in (140.0, 0.1024, 1e-6, 3000.0, 0.0001544, 14.000000000000002)]
    ['140', '0.1024', '0.000001', '3,000', '0.0001544', '14']
    """
    text = f"{float(value):.6g}"
    if "e" in text:
        mantissa, exponent = text.split("e")
        text = f"{float(value):.{max(0, len(mantissa.replace('.', '').lstrip('-')) - 1 - int(exponent))}f}"
    whole, dot, fraction = text.partition(".")
    return f"{int(whole):,}" + dot + fraction if whole.lstrip("-").isdigit() else text


class _NotNone(traitlets.Any):
    """Any value but ``None`` (``traitlets.Any`` allows ``None`` whatever ``allow_none`` says)."""

    allow_none = False


class LogFloatSlider(_StopSlider):
    """A float from ``min`` to ``max`` on a log scale: the handle steps through :func:`log_series` and ``presets``.

    ``value`` accepts any number (clamped to the range, as ipywidgets' FloatLogSlider does): a preset or a
    series stop is selected as it is; any other number becomes a stop of its own (held exactly, shown with up
    to 6 significant digits) until another such number replaces it. ``value`` is a ``float``.

    >>> s = LogFloatSlider(value=140, min=1e-6, max=1e3, presets=(350.0,), description="M (GB)")
    >>> s.value, s.label, s.stops[s.index - 1: s.index + 2]
    (140.0, '140', (100.0, 140.0, 200.0))
    >>> s.stops[s.stops.index(300.0): s.stops.index(500.0) + 1]
    (300.0, 350.0, 400.0, 500.0)
    >>> s.value = 0.1024; s.label, s.stops[s.index - 1: s.index + 2]
    ('0.1024', (0.07, 0.1024, 0.14))
    >>> s.value = 5000; s.value
    1000.0
    """

    #: never None: ipywidgets' selection value allows None, which no validator sees and leaves no option selected
    value = _NotNone(help="Selected value")

    def __init__(self, value: float, min: float, max: float, presets=(), mantissas=LOG_MANTISSAS,  # noqa: A002 -- ipywidgets' own names for the bounds
                 **kwargs):
        """``presets``: numbers the labs name, each a stop for good (default: the series only)."""
        low, high = float(min), float(max)
        self._presets = tuple(sorted({float(p) for p in presets if low <= p <= high}))
        self._base = self._without_crowding(log_series(low, high, mantissas), self._presets)
        value = self._clamp(value, low, high)
        stops = self._base if self._find(self._base, value) is not None else self._with_extra(value)
        kwargs.setdefault("readout", False)  # the entry box beside the handle is the readout (typed entry)
        super().__init__(options=self._labelled(stops), value=self._find(stops, value), **kwargs)
        self._build_entry()

    # -- typed entry: the readout a student can type into (as ipywidgets' FloatLogSlider's readout was) ---------
    def _build_entry(self) -> None:
        #: what was typed last, if it was refused or clamped ("" otherwise); shown in :attr:`note`
        self.entry_message = ""
        self._echo = False
        self.entry = widgets.Text(value=self.label, continuous_update=False, placeholder=self.description,
                                  tooltip=f"Type {self.description} and press Enter",
                                  layout=widgets.Layout(width="84px", margin="0 0 0 4px"))
        self.entry.add_class("course-log-entry")
        self.note = widgets.HTML(layout=widgets.Layout(margin="0 0 0 6px"))
        self.note.add_class("course-log-note")
        #: the slider, its entry box and the note, as the instrument lays them out
        self.course_box = widgets.HBox([self, self.entry, self.note],
                                       layout=widgets.Layout(align_items="center", flex_flow="row wrap"))
        self.course_box.add_class("course-log-box")
        self.entry.observe(self._typed, names="value")
        # "value" too: a new stop that takes the place of the current one (37.5 crowding out 40) changes the value
        # but not the index, and ipywidgets then leaves ``label`` on the old stop's text
        self.observe(self._moved, names=["index", "value"])
        self.observe(self._follow_disabled, names="disabled")

    def _show_entry(self, message: str = "") -> None:
        """Write the current value into the entry box (without reading it back) and show ``message``."""
        shown = stop_label(self.value)
        if self.label != shown:
            self.label = shown  # the same stop (ipywidgets moves the index by label): only the text was stale
        self._echo = True
        try:
            self.entry.value = shown
        finally:
            self._echo = False
        self.entry_message = message
        note = f"<span class='course-log-note-text' role='status'>{html.escape(message)}</span>" if message else ""
        if self.note.value != note:
            self.note.value = note

    def _moved(self, _change) -> None:
        self._show_entry()

    def _follow_disabled(self, change) -> None:
        self.entry.disabled = bool(change["new"])

    def parse_typed(self, text: str) -> float:
        """The number a student typed: '40', ' 1,000 ', '4e-4', '40 GB' (this slider's unit); ``ValueError`` else."""
        words = str(text).strip().replace(",", "").replace("_", "")
        unit = re.search(r"\(([^)]+)\)\s*$", self.description or "")
        if unit and words.lower().endswith(unit.group(1).lower()):
            words = words[: -len(unit.group(1))].strip()
        try:
            number = float(words)
        except ValueError:
            raise ValueError(f"“{str(text).strip()}” is not a number: type {self.description} as a number, "
                             f"e.g. {self.label}") from None
        if not math.isfinite(number) or number <= 0:
            raise ValueError(f"{self.description} must be a positive number, not “{str(text).strip()}”")
        return number

    def set_typed(self, text: str) -> str:
        """Set the value from typed ``text``; returns the message shown ("" when taken as typed), never raises.

        A number becomes a stop and is held exactly (as a value set from code); one out of range is clamped
        to it and says so; anything else is refused with a message and the value stays.
        """
        try:
            number = self.parse_typed(text)
        except ValueError as exc:
            self._show_entry(str(exc))
            return self.entry_message
        clamped = min(max(number, self.min), self.max)
        try:
            self.value = clamped  # also moves the handle and rewrites the entry (:meth:`_moved`)
        except Exception as exc:  # noqa: BLE001 - a student's typing never shows a traceback
            self._show_entry(f"{self.description} could not take “{str(text).strip()}” ({exc})")
            return self.entry_message
        message = "" if clamped == number else (
            f"{stop_label(number)} is outside {stop_label(self.min)} to {stop_label(self.max)}: "
            f"set to {self.label}")
        self._show_entry(message)
        return message

    def _typed(self, change) -> None:
        if not self._echo:
            self.set_typed(change["new"])

    @staticmethod
    def _labelled(stops) -> tuple:
        return tuple((stop_label(v), v) for v in stops)

    @staticmethod
    def _without_crowding(series, keep) -> tuple[float, ...]:
        """``series`` and ``keep``, less the series stops within :data:`CROWDED` of a kept one (ends stay)."""
        inner = [v for v in series[1:-1] if not any(k / CROWDED < v < k * CROWDED for k in keep)]
        return tuple(sorted({series[0], *inner, series[-1], *keep}))

    def _with_extra(self, value: float) -> tuple[float, ...]:
        crowded = [v for v in self._base if v not in self._presets and value / CROWDED < v < value * CROWDED
                   and v not in (self._base[0], self._base[-1])]
        return tuple(sorted({*(v for v in self._base if v not in crowded), value}))

    @staticmethod
    def _find(stops, value: float):
        """The stop that is ``value`` (within :data:`SAME`), or ``None``."""
        for v in stops:
            if abs(v - value) <= SAME * abs(value):
                return v
        return None

    @staticmethod
    def _clamp(value, low: float, high: float) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
                or not math.isfinite(value) or value <= 0:
            raise traitlets.TraitError(f"value must be a positive number, got {value!r}")
        return float(min(max(float(value), low), high))

    @property
    def presets(self) -> tuple[float, ...]:
        return self._presets

    @traitlets.validate("value")
    def _validate_value(self, proposal):
        if proposal.value is None:
            raise traitlets.TraitError("value must be a positive number, got None")
        value = self._clamp(proposal.value, self.min, self.max)
        found = self._find(self._options_values, value)
        if found is not None:
            return found
        found = self._find(self._base, value)
        stops = self._base if found is not None else self._with_extra(value)
        if stops != self.stops:
            self._set_stops(stops)
        return found if found is not None else value


_LABEL_HANDLES = """
function nameHandles(root) {
  for (const slider of root.querySelectorAll('.widget-slider, .widget-hslider, .widget-vslider')) {
    const label = slider.querySelector('.widget-label');
    const name = label ? label.textContent.trim() : '';
    // noUiSlider says the handle's position: a selection slider's index ("53" for 40 GB); say the readout
    const readout = slider.querySelector('.widget-readout');
    const shown = readout ? readout.textContent.trim() : '';
    for (const handle of slider.querySelectorAll('[role="slider"]')) {
      if (name && handle.getAttribute('aria-label') !== name) handle.setAttribute('aria-label', name);
      if (shown && handle.getAttribute('aria-valuetext') !== shown) handle.setAttribute('aria-valuetext', shown);
    }
  }
  // a log slider's entry box (LogFloatSlider): named after its slider, since its label is the slider's
  for (const box of root.querySelectorAll('.course-log-box')) {
    const label = box.querySelector('.widget-slider .widget-label, .widget-hslider .widget-label');
    const input = box.querySelector('.course-log-entry input');
    const name = label ? label.textContent.trim() + ', typed value' : '';
    if (input && name && input.getAttribute('aria-label') !== name) input.setAttribute('aria-label', name);
  }
  // ipywidgets' Play: play/pause, stop and repeat buttons that hold only an icon
  for (const play of root.querySelectorAll('.widget-play')) {
    const actions = ['Play or pause', 'Stop', 'Repeat'];
    [...play.querySelectorAll(':scope > button')].forEach((button, i) => {
      if (actions[i] && button.getAttribute('aria-label') !== actions[i]) button.setAttribute('aria-label', actions[i]);
    });
  }
}
export default {
  render({ el }) {
    const observers = [];
    let tries = 0;
    const attach = () => {
      // the view is rendered before it is attached: wait until it sits in its instrument
      const root = el.closest('.course-instrument') || el.closest('.jp-OutputArea-output');
      // watch the controls only (a chart's redraw is no reason to look again): the row of controls (a renamed
      // or redrawn slider) and the extra widgets under the charts (a Play widget may be rendered there later)
      const controls = root && root.querySelector('.course-controls');
      const extra = root && root.querySelector('.course-extra');
      if (!root || (root.classList.contains('course-instrument') && !(controls && extra))) {
        if (tries++ < 100) setTimeout(attach, 100);
        return;
      }
      nameHandles(root);
      const watch = (target, options) => {
        const observer = new MutationObserver(() => nameHandles(root));
        observer.observe(target, options);
        observers.push(observer);
      };
      if (!controls) { watch(root, { childList: true, subtree: true, characterData: true }); return; }
      // aria-valuetext: noUiSlider writes the index back on every move
      watch(controls, { childList: true, subtree: true, characterData: true, attributes: true,
                        attributeFilter: ['aria-valuetext'] });
      watch(extra, { childList: true, subtree: true });
    };
    attach();
    return () => observers.forEach(o => o.disconnect());
  }
};
"""


class ControlNames(anywidget.AnyWidget):
    """Invisible: names every slider handle and Play button of its instrument (see module doc)."""

    _esm = _LABEL_HANDLES

    def __init__(self, **kwargs):
        kwargs.setdefault("layout", widgets.Layout(display="none"))
        super().__init__(**kwargs)
