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

__all__ = ["theme_css", "TONES", "MARK_COLORS", "mark_color", "mark_palette_css", "contrast_ratio"]

#: tone -> JupyterLab variable used for borders and accents
TONES = {
    "normal": "var(--jp-brand-color1)",
    "good": "var(--jp-success-color1)",
    "warn": "var(--jp-warn-color1)",
    "bad": "var(--jp-error-color1)",
    "muted": "var(--jp-border-color1)",
}

#: Chart mark colours, (Light theme, Dark theme). A bqplot mark takes :func:`mark_color`, a CSS
#: variable that the style sheet sets per JupyterLab theme (``body[data-jp-theme-light]``), so one
#: figure reads in both: Tailwind's 700 shades on Light's white, its 400 shades on Dark's #111/#212121,
#: each at least 4.5:1 against the chart's background (``tests/instruments/test_theme.py``
#: measures them against the installed themes' ``--jp-layout-color0/1``). ``ink`` is the theme's own
#: text colour, for marks that were black.
MARK_COLORS = {
    "blue": ("#1d4ed8", "#60a5fa"),
    "green": ("#15803d", "#4ade80"),
    "red": ("#b91c1c", "#f87171"),
    "orange": ("#c2410c", "#fb923c"),
    "purple": ("#7e22ce", "#c084fc"),
    "cyan": ("#0e7490", "#22d3ee"),
    "pink": ("#be185d", "#f472b6"),
    "gray": ("#475569", "#94a3b8"),
    "amber": ("#a16207", "#facc15"),
    "lime": ("#4d7c0f", "#a3e635"),
    "teal": ("#0f766e", "#2dd4bf"),
}
INK = "var(--jp-ui-font-color0)"


def mark_color(name: str) -> str:
    """The CSS colour of mark colour ``name`` (a key of :data:`MARK_COLORS`, or ``"ink"``).

    >>> mark_color("blue"), mark_color("ink")
    ('var(--course-mark-blue)', 'var(--jp-ui-font-color0)')
    """
    if name == "ink":
        return INK
    if name not in MARK_COLORS:
        raise ValueError(f"name must be 'ink' or one of {sorted(MARK_COLORS)}, got {name!r}")
    return f"var(--course-mark-{name})"


def mark_palette_css() -> str:
    """CSS custom properties for every mark colour: Light values by default, Dark values under the Dark theme."""
    light = " ".join(f"--course-mark-{name}: {pair[0]};" for name, pair in MARK_COLORS.items())
    dark = " ".join(f"--course-mark-{name}: {pair[1]};" for name, pair in MARK_COLORS.items())
    return f':root, body[data-jp-theme-light="true"] {{ {light} }}\nbody[data-jp-theme-light="false"] {{ {dark} }}\n'


def _luminance(hex_color: str) -> float:
    h = hex_color.lstrip("#")
    if len(h) == 3:
        h = "".join(c * 2 for c in h)
    channels = [int(h[i:i + 2], 16) / 255 for i in (0, 2, 4)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast_ratio(a: str, b: str) -> float:
    """WCAG 2.1 contrast ratio of two ``#rrggbb`` colours (1 to 21; 3 for graphics, 4.5 for text).

    >>> round(contrast_ratio("#000000", "#ffffff"), 1), round(contrast_ratio("#777777", "#ffffff"), 2)
    (21.0, 4.48)
    """
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


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
/* text for screen readers only (a chart's description in words): clipped, not display:none */
.course-sr-only { position: absolute !important; width: 1px; height: 1px; padding: 0; margin: -1px;
  overflow: hidden; clip: rect(0 0 0 0); clip-path: inset(50%); white-space: nowrap; border: 0; }
/* a chart's legend under it (a legend inside the plot covers curves) */
.course-legend { display: flex; flex-wrap: wrap; gap: 4px 14px; font-size: 0.8rem; color: var(--jp-ui-font-color1);
  padding: 0 8px 4px 70px; }
.course-legend-item { display: inline-flex; align-items: center; gap: 5px; }
.course-prediction-lock .widget-radio-box input { flex: none; order: -1; float: none; margin: 3px 8px 0 1px; }
"""


def theme_css() -> str:
    """The ``<style>`` block every course widget includes once."""
    return f"<style>{mark_palette_css()}{_CSS}</style>"
