"""Prediction locks: commit to an answer before the instrument shows the truth.

A :class:`PredictionLock` asks one question, a choice among a few options
(typically four), shown as one labelled radio group (``RadioGroup``: one
Tab stop, the arrow keys move the choice and never reach JupyterLab's notebook
shortcuts). The student picks, presses **Lock**, and from then on the answer is frozen: the widgets are disabled,
``lock()`` again changes nothing, and ``answer()`` with another value raises
:class:`PredictionLockedError`.

Where a locked prediction lives
-------------------------------
* ``predictions.json`` in the notebook's working folder (``folder=``; default
  the current directory). It is the source of truth: re-running the cell, or
  restarting the kernel, re-creates the lock already locked with the saved
  answer, and the file travels with an nbgrader submission so graders can
  award completion points (:func:`course.predictions_file.read_predictions`). Writes are atomic and
  first-writer-wins, under a file lock.
* The design ledger (:mod:`course.ledger`), as a record for the progress view.
  The ledger is never used to *restore* a lock: on an instructor's machine it
  could hold another student's answer.

Gating and reveal
-----------------
``lock.gate(instrument)`` keeps an instrument (or any widget) hidden until the
lock is locked. ``lock.reveal()`` compares the locked option with the correct
one, with its explanation and the lock's ``after_reveal`` text (everything
written for after the prediction). A notebook shows it with
``lock.reveal_view()`` (or ``lock.after_lock(markdown)`` for a passage such as a
reflection that presumes the answer): a view the lock renders once it is
locked, and updates in place, so the cell can run before or after locking and
shows the same after a restart.

Headless execution
------------------
Tests and notebook runs without a person call ``lock.answer(value)``, or set
the environment variable ``COURSE_AUTOPREDICT``: ``1`` answers every new lock
with its first option; a JSON object such as
``{"lab06/act1": "C"}`` answers the named keys.

Example
-------
>>> import tempfile
>>> from course.ledger import Ledger
>>> folder = tempfile.mkdtemp()
>>> lock = PredictionLock("demo/act1", "Naive / ring time at 128 GPUs?",
...                       options={"A": "about 2x", "B": "about 14x", "C": "about 128x", "D": "about 1000x"},
...                       correct="C", folder=folder, ledger=Ledger(folder + "/ledger.json"))
>>> lock.locked
False
>>> lock.answer("C")
>>> lock.locked, lock.value
(True, 'C')
>>> again = PredictionLock("demo/act1", "Naive / ring time at 128 GPUs?",
...                        options={"A": "2x", "B": "14x", "C": "128x", "D": "1000x"},
...                        folder=folder, ledger=Ledger(folder + "/ledger.json"))
>>> again.locked, again.value
(True, 'C')
>>> read_predictions(folder)["demo/act1"]["value"]
'C'
"""

from __future__ import annotations

import datetime as _dt
import html
import json
import os
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import anywidget
import ipywidgets as widgets
import mistune
import traitlets

from .predictions_file import PREDICTIONS_FILE, read_predictions
from .theme import theme_css
from .ledger import Ledger

__all__ = [
    "PredictionLock",
    "PredictionLockedError",
    "Reveal",
    "read_predictions",
    "PREDICTIONS_FILE",
]

AUTOPREDICT_ENV = "COURSE_AUTOPREDICT"
_LETTERS = "ABCDEFGH"

_RADIO_GROUP = """
let groups = 0;
// keys a radio group keeps: JupyterLab's notebook shortcuts (ArrowDown: next cell, A: insert a cell,
// Space: scroll) must not act while the student moves through the options
const KEPT = new Set(['ArrowUp', 'ArrowDown', 'ArrowLeft', 'ArrowRight', 'Home', 'End', ' ', 'Enter']);
export default {
  render({ model, el }) {
    const name = `course-lock-${Date.now().toString(36)}-${groups++}`;
    const group = document.createElement('div');
    group.className = 'widget-radio-box course-radio-group';
    group.setAttribute('role', 'radiogroup');
    el.appendChild(group);
    const radios = () => [...group.querySelectorAll('input[type=radio]')];
    const draw = () => {
      group.replaceChildren();
      for (const [label, key] of model.get('options')) {
        const row = document.createElement('label');
        const input = document.createElement('input');
        input.type = 'radio';
        input.name = name;  // one group: one Tab stop, the arrow keys move the choice (the browser's own)
        input.value = key;
        input.addEventListener('change', () => {
          if (!input.checked) return;
          model.set('value', key); model.save_changes();
          // ipywidgets holds back a state update while an earlier one is unanswered (a busy kernel),
          // but sends a custom message (the Lock button's click) at once: a choice changed just before
          // the click would reach the kernel after it, and the old choice would be locked. The choice
          // also goes as a custom message, so the kernel sees it before the click.
          model.send({ choose: key });
        });
        row.appendChild(input);
        row.appendChild(document.createTextNode(label));
        group.appendChild(row);
      }
      sync();
    };
    const sync = () => {
      group.setAttribute('aria-label', model.get('label'));
      const disabled = model.get('disabled');
      group.toggleAttribute('aria-disabled', disabled);
      for (const input of radios()) {
        input.checked = input.value === model.get('value');
        input.disabled = disabled;
      }
    };
    group.addEventListener('keydown', (event) => {
      if (event.ctrlKey || event.metaKey || event.altKey || (event.shiftKey && event.key === 'Enter')) return;
      if (KEPT.has(event.key) || event.key.length === 1) event.stopPropagation();
      if (event.key === 'Home' || event.key === 'End') {  // first / last option, as a radio group does
        const enabled = radios().filter(r => !r.disabled);
        const target = event.key === 'Home' ? enabled[0] : enabled[enabled.length - 1];
        if (target) { event.preventDefault(); target.focus(); target.click(); }
      }
    });
    model.on('change:options', draw);
    model.on('change:value', sync);
    model.on('change:disabled', sync);
    model.on('change:label', sync);
    draw();
    return () => {
      model.off('change:options', draw); model.off('change:value', sync);
      model.off('change:disabled', sync); model.off('change:label', sync);
    };
  }
};
"""


class RadioGroup(anywidget.AnyWidget):
    """One labelled radio group: ``role="radiogroup"`` named by ``label``, native radios that share a
    ``name`` (one Tab stop; the arrow keys move the choice, as in any radio group), and keys that
    stay in the group (ipywidgets' RadioButtons let ArrowDown reach JupyterLab, which moves to the
    next cell). The traits follow ipywidgets' ``RadioButtons``: ``options`` as (label, key) pairs,
    ``value`` the chosen key or ``None``, ``disabled``.

    >>> group = RadioGroup(options=[("A) two", "A"), ("B) four", "B")], label="How many?")
    >>> group.value is None, group.options[1]
    (True, ('B) four', 'B'))
    >>> group.value = "B"; group.value
    'B'
    >>> group.value = "C"
    Traceback (most recent call last):
    ...
    traitlets.traitlets.TraitError: value must be one of ['A', 'B'] or None, got 'C'
    """

    _esm = _RADIO_GROUP
    options = traitlets.List().tag(sync=True)
    value = traitlets.Unicode(None, allow_none=True).tag(sync=True)
    disabled = traitlets.Bool(False).tag(sync=True)
    label = traitlets.Unicode("").tag(sync=True)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.on_msg(self._on_choose)

    def _on_choose(self, _widget, content, _buffers) -> None:
        """A choice the browser sent as a custom message (in order with the Lock button's click)."""
        key = content.get("choose") if isinstance(content, dict) else None
        if not self.disabled and key in [k for _label, k in self.options]:
            # the browser has this choice already: no echo back (as ipywidgets' own set_state locks the
            # property). An echo arrives after the student may have moved on, re-checks the older option
            # for a moment and moves the keyboard focus to it
            with self._lock_property(value=key):
                self.value = key

    @traitlets.validate("options")
    def _validate_options(self, proposal):
        return [tuple(pair) for pair in proposal.value]

    @traitlets.validate("value")
    def _validate_value(self, proposal):
        keys = [key for _label, key in self.options]
        if proposal.value is not None and proposal.value not in keys:
            raise traitlets.TraitError(f"value must be one of {keys} or None, got {proposal.value!r}")
        return proposal.value


class LockedView:
    """Markdown a lock renders only once it is locked, updated in place when it locks.

    ``render()`` gives the markdown or HTML to show once locked (HTML if it starts with
    ``<``); ``before`` is shown until then. Display the view (or its ``widget``) in a cell.
    """

    def __init__(self, lock: "PredictionLock", render, before: str):
        self._lock, self._render, self._before = lock, render, before
        self.widget = widgets.HTML()
        self.widget.add_class("course-locked-view")
        self.refresh()

    def refresh(self) -> None:
        text = self._render() if self._lock.locked else self._before
        self.widget.value = f"{theme_css()}<div class='course-ui'>{text if text.startswith('<') else mistune.html(text)}</div>"

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)


class RevealView(LockedView):
    """The lock's :class:`Reveal` card where a notebook asks for it: a note before locking, the
    outcome, explanation and ``after_reveal`` text once locked (recorded in the ledger then).
    The current :class:`Reveal` is :attr:`result`; its fields read through (``view.correct``)."""

    def __init__(self, lock: "PredictionLock"):
        self.result = Reveal(lock.key, False)
        super().__init__(lock, self._reveal_html, "")

    def _reveal_html(self) -> str:
        self.result = self._lock.reveal()
        return self.result._repr_html_()

    def refresh(self) -> None:
        super().refresh()
        if not self._lock.locked:
            self.result = self._lock.reveal(record=False)
            self.widget.value = self.result._repr_html_()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name in ("result", "widget"):
            raise AttributeError(name)
        return getattr(self.result, name)


class PredictionLockedError(RuntimeError):
    """Raised when code tries to change a prediction that is already locked."""


@dataclass
class Reveal:
    """Prediction against reality, as plain data (and a small HTML card)."""

    key: str
    locked: bool
    prediction: Any = None
    actual: Any = None
    correct: bool | None = None
    message: str = ""
    explanation: str = ""
    after_reveal: str = ""

    def as_dict(self) -> dict:
        return asdict(self)

    def _repr_html_(self) -> str:
        if not self.locked:
            tone, title = "warn", "No prediction locked yet"
        elif self.correct:
            tone, title = "good", "Your prediction holds"
        else:
            tone, title = "bad", "Reality differs from your prediction"
        body = html.escape(self.message)
        if self.explanation:
            body += f"<div class='course-reveal-explanation'>{html.escape(self.explanation)}</div>"
        if self.after_reveal:
            # course-authored markdown (a correction that would have given the answer away)
            body += f"<div class='course-reveal-after'>{mistune.html(self.after_reveal)}</div>"
        return (f"{theme_css()}<div class='course-reveal course-tone-{tone}'>"
                f"<b class='course-reveal-title'>{title}</b><div>{body}</div></div>")


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


class PredictionLock:
    """A question whose answer is committed, frozen, saved and later revealed.

    Parameters
    ----------
    key : str
        Ledger key, e.g. ``"lab06/act1"``.
    question : str
        The question shown above the options.
    options : sequence of str or mapping {key: label}
        Choice options (2 to 8; labs use 4). A plain sequence gets keys
        ``"A"``, ``"B"``... The locked value is the option's key.
    correct : str, optional
        Correct option key, used by :meth:`reveal` for choices.
    explanations : str or mapping {option key: str}, optional
        Shown by :meth:`reveal`.
    after_reveal : str, optional
        Markdown that gives the answer away; shown by :meth:`reveal` once locked.
    folder : path, optional
        Where ``predictions.json`` is kept (default: current directory).
    ledger : Ledger, optional
        Design ledger to record in (default: :class:`~course.ledger.Ledger()`).
    aliases : mapping {old value: option key}, optional
        Values an older ``predictions.json`` stored for an option (the letters stored before options
        had ids); a saved alias restores as its option, and :meth:`answer` accepts it.

    The options are shown in the order given, lettered ``A)``, ``B)``... by position; the letter is
    only where it sits on this screen: what is locked, saved and revealed is the option's key, and
    the status and reveal quote the option's text.
    """

    def __init__(
        self,
        key: str,
        question: str,
        *,
        options: Sequence[str] | Mapping[str, str],
        correct: str | None = None,
        explanations: str | Mapping[str, str] | None = None,
        after_reveal: str = "",
        folder: str | os.PathLike | None = None,
        ledger: Ledger | None = None,
        aliases: Mapping[str, str] | None = None,
    ):
        if not isinstance(key, str) or not key.strip():
            raise ValueError(f"key must be a non-empty string like 'lab06/act1', got {key!r}")
        if options is None:
            raise ValueError("options must be 2 to 8 choices, got None")
        self.key = key
        self.question = question
        self.explanations = explanations
        self.after_reveal = after_reveal
        self.folder = Path(folder) if folder is not None else Path.cwd()
        self.ledger = ledger if ledger is not None else Ledger()
        self._gated: list[Any] = []
        self._views: list[LockedView] = []
        self._value: Any = None
        self.aliases = dict(aliases or {})

        self.kind = "choice"
        if isinstance(options, Mapping):
            self.options = {str(k): str(v) for k, v in options.items()}
        else:
            self.options = {_LETTERS[i]: str(v) for i, v in enumerate(list(options)[: len(_LETTERS)])}
            if len(options) > len(_LETTERS):
                raise ValueError(f"options must have 2 to {len(_LETTERS)} entries, got {len(options)}")
        if not 2 <= len(self.options) <= len(_LETTERS):
            raise ValueError(f"options must have 2 to {len(_LETTERS)} entries, got {len(self.options)}")
        if correct is not None and correct not in self.options:
            raise ValueError(f"correct must be one of {list(self.options)}, got {correct!r}")
        self.correct = correct
        self._choices = widgets.HBox([])  # the radio group (_new_group), created below with its first state
        self.button = widgets.Button(
            # enabled from the start: a keyboard user who chooses and presses Tab at once must land on it (a
            # button enabled only once the kernel has seen the choice was skipped); with nothing chosen it says so
            description="Lock prediction", icon="lock",  # the theme's own button colours: legible in both
        )
        self.status = widgets.HTML(self._status_html("Choose, then lock. You cannot change it afterwards."))
        header = widgets.HTML(
            f"{theme_css()}<div class='course-kicker'>Prediction lock</div>"
            f"<div class='course-ui' style='font-weight:600;margin:4px 0'>{html.escape(question)}</div>"
        )
        self.widget = widgets.VBox(
            [header, self._choices, widgets.HBox([self.button, self.status])],
            layout=widgets.Layout(padding="8px 12px", margin="6px 0"),
        )
        self.widget.add_class("course-prediction-lock")
        self.button.on_click(lambda _b: self._lock_from_ui())

        saved = read_predictions(self.folder).get(key)
        if saved is not None and self._valid(self._resolve(saved["value"])):
            self._freeze(self._resolve(saved["value"]), message="Locked earlier; restored from predictions.json.")
        else:
            self._new_group(value=None, disabled=False)
            self._autopredict()

    # -- state --------------------------------------------------------------
    @property
    def locked(self) -> bool:
        return self._value is not None

    @property
    def value(self) -> Any:
        """The locked answer (option key or number), or ``None`` before locking."""
        return self._value

    def _resolve(self, value: Any) -> Any:
        """The option key ``value`` stands for (itself, or the option an alias names)."""
        if isinstance(value, str) and value not in self.options:
            return self.aliases.get(value, value)
        return value

    def _valid(self, value: Any) -> bool:
        return isinstance(value, str) and value in self.options

    def _check(self, value: Any) -> Any:
        value = self._resolve(value)
        if not isinstance(value, str) or value not in self.options:
            raise ValueError(f"value must be one of {list(self.options)}, got {value!r}")
        return value

    # -- locking ------------------------------------------------------------
    def answer(self, value: Any) -> None:
        """Set and lock the prediction (tests, headless runs).

        Raises :class:`PredictionLockedError` if already locked with another
        value, ``ValueError`` if the value is not an option.
        """
        value = self._check(value)
        if self.locked:
            if value == self._value:
                return
            raise PredictionLockedError(
                f"prediction {self.key!r} is locked at {self._value!r}; it cannot be changed to {value!r}"
            )
        self.input.value = value
        self.lock()

    def lock(self) -> None:
        """Lock the currently selected answer. Locking twice changes nothing."""
        if self.locked:
            self.status.value = self._status_html(f"Already locked at <b>{html.escape(self._label(self._value))}</b>; it stays.")
            return
        value = self.input.value
        if value is None:
            self.status.value = self._status_html("Pick an option first.", "warn")
            return
        value = self._check(value)
        stored = Ledger(self.folder / PREDICTIONS_FILE).record_once(
            self.key,
            {"value": value, "kind": self.kind, "question": self.question, "locked": True, "locked_at": _now()},
        )
        # Another kernel may have locked first; its answer wins everywhere.
        value = stored["value"]
        try:
            self.ledger.record(self.key, {"prediction": value, "prediction_locked_at": stored["locked_at"]})
        except (OSError, ValueError) as exc:  # the lock itself is safe in predictions.json
            warnings.warn(f"prediction locked, but the design ledger could not be written: {exc}")
        self._freeze(value, message="Locked.")

    def _lock_from_ui(self) -> None:
        try:
            self.lock()
        except Exception as exc:  # show, never raise into the widget callback
            self.status.value = self._status_html(f"Could not lock: {html.escape(str(exc))}", "bad")

    def _new_group(self, value: Any, disabled: bool) -> None:
        """Show a radio group created with ``value`` and ``disabled`` as its first state.

        The group is an anywidget, and anywidget (0.11) drops every later update the kernel sends to a
        model whose front-end module took more than two seconds to load (a busy browser during Run All:
        its ``Runtime`` rejects ``ready`` after ``AbortSignal.timeout(2000)`` and ``_handle_comm_msg``
        awaits it). A state a group is created with travels in the model's opening message, which that
        timeout cannot drop; so a lock that locks (or is restored locked) replaces its group with a new,
        disabled one instead of updating the old one.
        """
        old = getattr(self, "input", None)
        self.input = RadioGroup(
            options=[(f"{_LETTERS[i]}) {label}", k) for i, (k, label) in enumerate(self.options.items())],
            value=value, disabled=disabled, label=self.question, layout=widgets.Layout(width="auto"),
        )
        self.input.observe(self._on_input, names="value")
        self._choices.children = (self.input,)
        if old is not None:
            old.close()

    def _freeze(self, value: Any, message: str) -> None:
        self._value = value
        self._new_group(value=value, disabled=True)
        self.button.disabled = True
        self.button.description = "Locked"
        self.button.button_style = ""
        self.status.value = self._status_html(f"{message} Your prediction: <b>{html.escape(self._label(value))}</b>")
        for target in self._gated:
            _set_gated(target, False)
        for view in self._views:
            view.refresh()

    def _on_input(self, change: dict) -> None:
        if self.locked and change["new"] != self._value:
            # A frozen lock ignores edits (from a browser that still shows it enabled, or code).
            self.input.value = self._value
            self.status.value = self._status_html("This prediction is locked and cannot be changed.", "bad")

    def _autopredict(self) -> None:
        setting = os.environ.get(AUTOPREDICT_ENV, "").strip()
        if not setting or setting == "0":
            return
        if setting.startswith("{"):
            try:
                chosen = json.loads(setting).get(self.key)
            except ValueError:
                raise ValueError(f"{AUTOPREDICT_ENV} must be 1 or a JSON object, got {setting!r}") from None
            if chosen is None:
                return
        else:
            chosen = next(iter(self.options))
        self.answer(chosen)

    # -- gating -------------------------------------------------------------
    def gate(self, *targets: Any) -> Any:
        """Keep instruments/widgets hidden and disabled until this lock is locked.

        Returns the first target so ``inst = lock.gate(Comparator())`` reads well.
        """
        for target in targets:
            self._gated.append(target)
            _set_gated(target, not self.locked)
        return targets[0] if targets else None

    # -- what the lock shows once locked -------------------------------------
    def reveal_view(self) -> RevealView:
        """The reveal card, rendered once this lock is locked and updated in place (``RevealView``)."""
        view = RevealView(self)
        self._views.append(view)
        return view

    def after_lock(self, markdown: str, before: str) -> LockedView:
        """``markdown`` rendered once this lock is locked (``before`` until then), updated in place."""
        view = LockedView(self, lambda: markdown, before)
        self._views.append(view)
        return view

    # -- reveal -------------------------------------------------------------
    def reveal(self, actual: Any = None, *, explanation: str | None = None, record: bool = True) -> Reveal:
        """Compare the locked option with the correct one and record the outcome.

        Parameters
        ----------
        actual : str, optional
            The correct option key (default: ``correct`` given at creation).
        explanation : str, optional
            Overrides the explanation given at creation.
        """
        if not self.locked:
            return Reveal(self.key, False, message="Lock a prediction first; then the reveal compares it with reality.")
        truth = self._resolve(actual) if actual is not None else self.correct
        if truth not in self.options:
            raise ValueError(f"actual must be one of {list(self.options)}, got {truth!r}")
        correct = self._value == truth
        if explanation is None:
            if isinstance(self.explanations, Mapping):
                explanation = self.explanations.get(self._value, "")
            else:
                explanation = self.explanations or ""
        message = (
            f"You chose {self._label(self._value)}. "
            + ("That is right." if correct else f"The right answer is {self._label(truth)}.")
        )
        result = Reveal(self.key, True, self._value, truth, correct, message, explanation, self.after_reveal)
        if record:
            try:
                self.ledger.record(self.key, {"correct": result.correct, "actual": result.actual})
            except (OSError, ValueError) as exc:
                warnings.warn(f"the design ledger could not be written: {exc}")
        return result

    # -- display ------------------------------------------------------------
    def _label(self, value: Any) -> str:
        """An option as the student reads it wherever its letter may differ: its text, quoted."""
        return f"“{self.options.get(value, value)}”"

    @staticmethod
    def _status_html(text: str, tone: str = "normal") -> str:
        # the tone marks the line with a border; the text keeps the theme's font colour
        return (f"<span class='course-lock-status course-tone-{tone}' style='border-left:3px solid "
                f"var(--course-tone);padding-left:6px'>{text}</span>")

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)


def _set_gated(target: Any, gated: bool) -> None:
    """Hide/disable an instrument (anything with ``set_gated``) or a plain widget."""
    if hasattr(target, "set_gated"):
        target.set_gated(gated)
        return
    widget = getattr(target, "widget", target)
    if hasattr(widget, "layout"):
        widget.layout.display = "none" if gated else None
    if hasattr(widget, "disabled"):
        widget.disabled = gated
