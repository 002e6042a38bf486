"""Small HTML pieces shared by all instruments and labs.

Metric cards, failure banners, the stakeholder message card, and the HUD
footer (a one-line summary of the design ledger). They are plain functions
returning HTML, plus two thin widget wrappers, so labs can use them without
an instrument.
"""

from __future__ import annotations

import html

import ipywidgets as widgets

__all__ = [
    "metric_card_html",
    "banner_html",
    "stakeholder_card",
    "HudFooter",
    "TONES",
]

#: colour for a card's accent by tone
TONES = {"normal": "#4f46e5", "good": "#15803d", "warn": "#b45309", "bad": "#b91c1c", "muted": "#64748b"}


def metric_card_html(label: str, value: str, detail: str = "", tone: str = "normal") -> str:
    """One metric card: a label, a big value, an optional detail line."""
    colour = TONES.get(tone, TONES["normal"])
    return (
        "<div class='course-card' style='border:1px solid #e2e8f0;border-top:4px solid "
        f"{colour};border-radius:8px;padding:8px 14px;margin:4px;min-width:140px;text-align:center'>"
        f"<div style='font-size:0.78rem;color:#64748b'>{html.escape(label)}</div>"
        f"<div class='course-card-value' style='font-size:1.35rem;font-weight:800;color:{colour}'>"
        f"{html.escape(value)}</div>"
        + (f"<div style='font-size:0.75rem;color:#64748b'>{html.escape(detail)}</div>" if detail else "")
        + "</div>"
    )


def banner_html(code: str, message: str, severity: str = "error") -> str:
    """A failure banner shown instead of a traceback."""
    colour, background = ("#b91c1c", "#fef2f2") if severity == "error" else ("#b45309", "#fffbeb")
    return (
        f"<div class='course-failure course-failure-{html.escape(code)}' role='alert' "
        f"style='border-left:5px solid {colour};background:{background};padding:8px 12px;margin:4px 0'>"
        f"<b style='color:{colour}'>Failure state: {html.escape(code.replace('_', ' '))}</b>"
        f"<div>{html.escape(message)}</div></div>"
    )


def stakeholder_card(sender: str, message: str, *, role: str = "", act: str = "") -> widgets.HTML:
    """The incoming message that frames an act ("Incoming message · MLOps lead")."""
    who = html.escape(sender + (f" · {role}" if role else ""))
    tag = f"{html.escape(act)} · " if act else ""
    return widgets.HTML(
        "<div class='course-stakeholder' style='border-left:4px solid #ea580c;background:#fff7ed;"
        "border-radius:0 10px 10px 0;padding:12px 18px;margin:6px 0'>"
        f"<div style='font-size:0.72rem;font-weight:700;color:#ea580c;text-transform:uppercase;"
        f"letter-spacing:0.1em'>{tag}Incoming message · {who}</div>"
        f"<div style='font-style:italic;line-height:1.6;margin-top:4px'>{html.escape(message)}</div></div>"
    )


class HudFooter:
    """A one-line heads-up display of the design ledger, refreshed on demand.

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
            "<div style='font-family:monospace;font-size:0.8rem;color:#334155;background:#f1f5f9;"
            "padding:6px 10px;border-radius:6px'>"
            f"LEDGER [{scope}] · {s['entries']} saved · predictions locked {s['predictions_locked']} "
            f"· correct {s['predictions_correct']} · failure states hit: "
            f"{html.escape(', '.join(s['failures_hit']) or 'none')}</div>"
        )
        return s

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)
