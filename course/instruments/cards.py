"""Small HTML pieces shared by all instruments and labs.

Metric cards, failure banners, the stakeholder message card, and the HUD
footer (a one-line summary of the design ledger). They are plain functions
returning HTML, plus two thin widget wrappers, so labs can use them without
an instrument.
"""

from __future__ import annotations

import html

import ipywidgets as widgets

from ..theme import TONES, theme_css

__all__ = [
    "metric_card_html",
    "banner_html",
    "stakeholder_card",
    "HudFooter",
    "TONES",
]

def metric_card_html(label: str, value: str, detail: str = "", tone: str = "normal") -> str:
    """One metric card: a label, a big value, an optional detail line; the tone colours its top border."""
    tone = tone if tone in TONES else "normal"
    return (
        f"<div class='course-card course-tone-{tone}' style='margin:4px;text-align:center'>"
        f"<div class='course-card-label'>{html.escape(label)}</div>"
        f"<div class='course-card-value'>{html.escape(value)}</div>"
        + (f"<div class='course-card-detail'>{html.escape(detail)}</div>" if detail else "")
        + "</div>"
    )


#: a failure state's name on its banner where the code's words are not what the labs call it
FAILURE_NAMES = {"comm_bound": "communication over 50 % of the step"}


def banner_html(code: str, message: str, severity: str = "error") -> str:
    """A failure banner shown instead of a traceback, named as the labs name it (:data:`FAILURE_NAMES`).

    >>> "Failure state: communication over 50 % of the step" in banner_html("comm_bound", "...")
    True
    """
    tone = "bad" if severity == "error" else "warn"
    name = FAILURE_NAMES.get(code, code.replace("_", " "))
    return (
        f"{theme_css()}<div class='course-failure course-failure-{html.escape(code)} course-banner course-tone-{tone}' "
        f"role='alert'><b>Failure state: {html.escape(name)}</b>"
        f"<div>{html.escape(message)}</div></div>"
    )


def stakeholder_card(sender: str, message: str, *, role: str = "", act: str = "") -> widgets.HTML:
    """The incoming message that frames an act ("Incoming message · MLOps lead")."""
    who = html.escape(sender + (f" · {role}" if role else ""))
    tag = f"{html.escape(act)} · " if act else ""
    return widgets.HTML(
        f"{theme_css()}<div class='course-stakeholder course-tone-warn' style='border-radius:0 10px 10px 0;"
        "padding:12px 18px;margin:6px 0'>"
        f"<div class='course-kicker'>{tag}Incoming message · {who}</div>"
        f"<div style='font-style:italic;line-height:1.6;margin-top:4px'>{html.escape(message)}</div></div>"
    )


class HudFooter:
    """A one-line heads-up display of the design ledger, refreshed whenever this kernel writes it.

    Parameters
    ----------
    prefix : str
        Only entries whose key starts with this ("lab06/") are summarised.
    ledger : Ledger, optional
        Default: the student's ledger.
    """

    def __init__(self, prefix: str = "", ledger=None):
        from ..ledger import Ledger

        self.prefix = prefix
        self.ledger = ledger if ledger is not None else Ledger()
        self.widget = widgets.HTML()
        self.widget.add_class("course-hud")
        self.ledger.on_write(self.refresh)  # a lock locked below updates this line in place
        self.refresh()

    def summary(self) -> dict:
        entries = {k: v for k, v in self.ledger.entries().items() if k.startswith(self.prefix)}
        failures = sorted({f for e in entries.values() for f in e.get("failures_hit", [])})
        return {
            "entries": len(entries),
            "predictions_locked": sum("prediction" in e for e in entries.values()),
            "predictions_correct": sum(e.get("correct") is True for e in entries.values()),
            "failures_hit": failures,
        }

    def refresh(self) -> dict:
        s = self.summary()
        scope = html.escape(self.prefix.rstrip("/") or "all")
        self.widget.value = (
            f"{theme_css()}<div class='course-mono' style='border-radius:6px'>"
            f"LEDGER [{scope}] · {s['entries']} saved · predictions locked {s['predictions_locked']} "
            f"· correct {s['predictions_correct']} · failure states hit: "
            f"{html.escape(', '.join(s['failures_hit']) or 'none')}</div>"
        )
        return s

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)
