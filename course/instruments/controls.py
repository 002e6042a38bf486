"""Controls the instruments need beyond stock ipywidgets: a log-scale integer slider and slider names.

* :class:`LogIntSlider`: an integer control whose handle steps through powers of
  two (2, 4, ... 4096: a range that spans decades, on a log scale), while any
  whole number set from Python (a student's variant of 136 GPUs, a fleet of
  10,000 cars) is held exactly and becomes one more stop of the slider.
* :class:`ControlNames`: ipywidgets 8 draws a slider's handle as a noUiSlider
  ``<div role="slider">`` with no accessible name (its description is a
  separate ``<label>`` bound to nothing), so a screen reader announces
  "slider, 512" and axe-core reports ``aria-input-field-name`` (serious); the
  Play widget's buttons hold only an icon (axe-core: ``button-name``,
  critical). No trait reaches those elements, so this invisible widget runs a
  small front-end module (anywidget) that gives each handle in its instrument
  the ``aria-label`` of its slider's description and each Play button its
  action, and again whenever a control is redrawn or renamed ("GPUs N" becomes
  "Devices N" on the Edge track). It watches the row of controls and the extra
  widgets (a Play) only: a chart's redraw on every slider move is none of its business.
"""

from __future__ import annotations

import math

import anywidget
import ipywidgets as widgets
import traitlets

__all__ = ["LogIntSlider", "ControlNames", "powers_of_two"]


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


class LogIntSlider(widgets.SelectionSlider):
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
    def stops(self) -> tuple[int, ...]:
        return tuple(self._options_values)

    @property
    def min(self) -> int:
        return self.stops[0]

    @property
    def max(self) -> int:
        return self.stops[-1]

    @max.setter
    def max(self, high: int) -> None:
        high = int(high)
        if high > self.max:
            self._set_stops(tuple(sorted({*self.stops, *powers_of_two(self.max, high)})))

    def _set_stops(self, stops: tuple[int, ...]) -> None:
        """New stops, keeping the current value and sending one message (no detour through the first stop)."""
        current = self._options_values[self.index] if self.index is not None else None
        with self.hold_sync():
            self._initializing_traits_ = True  # ipywidgets otherwise selects the first option on new options
            try:
                self.options = self._labelled(stops)
            finally:
                self._initializing_traits_ = False
            if current is not None:
                self.index = stops.index(current)

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


_LABEL_HANDLES = """
function nameHandles(root) {
  for (const slider of root.querySelectorAll('.widget-slider, .widget-hslider, .widget-vslider')) {
    const label = slider.querySelector('.widget-label');
    const name = label ? label.textContent.trim() : '';
    for (const handle of slider.querySelectorAll('[role="slider"]')) {
      if (name && handle.getAttribute('aria-label') !== name) handle.setAttribute('aria-label', name);
    }
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
      watch(controls, { childList: true, subtree: true, characterData: true });
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
