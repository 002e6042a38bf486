"""One style sheet for instruments, cards, banners and locks, in JupyterLab's own CSS variables.

Every colour is a JupyterLab theme variable (``--jp-ui-font-color0``,
``--jp-layout-color1``...), so text follows the Light and Dark themes. Text is
always a font colour on a layout colour; the tones (good, warn, bad...) only
colour borders and marks, never the text a student must read, because a
saturated colour that reads on white fails on near-black (and back).
``tests/browser/test_labs_browser.py`` measures the contrast in both themes.

Widgets insert :func:`theme_css` once in their own header HTML; a page holding
several copies of the same ``<style>`` is harmless.
"""

from __future__ import annotations

__all__ = ["theme_css", "TONES"]

#: tone -> JupyterLab variable used for borders and accents
TONES = {
    "normal": "var(--jp-brand-color1)",
    "good": "var(--jp-success-color1)",
    "warn": "var(--jp-warn-color1)",
    "bad": "var(--jp-error-color1)",
    "muted": "var(--jp-border-color1)",
}

_CSS = """
.course-ui, .course-card, .course-banner, .course-reveal, .course-lock-status, .course-stakeholder,
.course-prediction-lock, .course-instrument, .course-hud, .course-track-scene {
  color: var(--jp-ui-font-color0);
}
.course-title { font-size: 1.05rem; font-weight: 700; color: var(--jp-ui-font-color0); }
.course-subtitle, .course-muted { font-size: 0.85rem; color: var(--jp-ui-font-color1); }
.course-kicker { font-size: 0.75rem; font-weight: 700; letter-spacing: 0.12em; text-transform: uppercase;
  color: var(--jp-ui-font-color1); }
.course-panel { background: var(--jp-layout-color1); border: 1px solid var(--jp-border-color2); }
.course-card { background: var(--jp-layout-color1); border: 1px solid var(--jp-border-color2);
  border-top: 4px solid var(--course-tone, var(--jp-brand-color1)); border-radius: 6px; padding: 6px 10px;
  min-width: 120px; }
.course-card-label, .course-card-detail { font-size: 0.78rem; color: var(--jp-ui-font-color1); }
.course-card-value { font-size: 1.35rem; font-weight: 800; color: var(--jp-ui-font-color0); }
.course-banner, .course-reveal, .course-stakeholder, .course-gated-note {
  background: var(--jp-layout-color2); color: var(--jp-ui-font-color0);
  border-left: 5px solid var(--course-tone, var(--jp-brand-color1)); padding: 8px 12px; margin: 4px 0; }
.course-reveal-explanation, .course-reveal-after { margin-top: 6px; }
.course-mono { font-family: var(--jp-code-font-family); font-size: 0.8rem; background: var(--jp-layout-color2);
  color: var(--jp-ui-font-color0); padding: 6px 8px; }
.course-tone-normal { --course-tone: var(--jp-brand-color1); }
.course-tone-good { --course-tone: var(--jp-success-color1); }
.course-tone-warn { --course-tone: var(--jp-warn-color1); }
.course-tone-bad { --course-tone: var(--jp-error-color1); }
.course-tone-muted { --course-tone: var(--jp-border-color1); }
.course-lock-status { margin-left: 8px; }
.course-prediction-lock { border: 1px solid var(--jp-warn-color1); background: var(--jp-layout-color1); }
.course-prediction-lock .widget-radio-box { height: auto; }
.course-prediction-lock .widget-radio-box label {
  display: flex; height: auto; min-height: var(--jp-widgets-radio-item-height, 24px); line-height: 1.35;
  white-space: normal; align-items: flex-start; padding: 2px 0; overflow: visible; }
/* ipywidgets puts the radio after the option's text and floats it left, so a long option that
   wraps shows its first line above the radio: in a flex row the radio comes first, whatever wraps */
.course-prediction-lock .widget-radio-box input { flex: none; order: -1; float: none; margin: 3px 8px 0 1px; }
"""


def theme_css() -> str:
    """The ``<style>`` block every course widget includes once."""
    return f"<style>{_CSS}</style>"
