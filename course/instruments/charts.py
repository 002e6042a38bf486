"""What a chart says in words, its legend under the plot, and tick values a student can read.

bqplot draws SVG that a screen reader cannot read: every instrument figure
gets a text alternative (:func:`describe_figure`), rewritten after each
update from the very arrays the marks hold, so it always says what the chart
shows. A legend inside the plot covers curves; :func:`legend_html` draws it
under the figure in the theme's colours instead. :func:`set_ticks` puts a
log axis's ticks at a few powers (:func:`decade_ticks`, :func:`integer_ticks`)
labelled in words a student reads ("1 MB", "10 ms", "4,096"), not ``2.0e+2``
or ``5000`` and ``10000`` run together as ``500010000``.
"""

from __future__ import annotations

import html
import math

import bqplot as bq
import numpy as np

__all__ = ["describe_figure", "describe_mark", "legend_entries", "legend_html", "decade_ticks", "integer_ticks",
           "set_ticks", "js_number_key", "segments", "segment_count", "MAX_POINTS_LISTED"]
#: A scatter or bar chart lists at most this many values by name; longer series are summarised.
MAX_POINTS_LISTED = 8

#: what every ``bq.Scatter`` of the instruments passes (``bq.Scatter(**UNNAMED, ...)``): no point names are drawn,
#: and their offsets are numbers. bqplot's Scatter defaults both offsets to None and still places each point's
#: name at ``translate(undefined, undefined)``: a console error per point and redraw in every browser.
UNNAMED = {"display_names": False, "label_display_horizontal_offset": 0.0, "label_display_vertical_offset": 0.0}


def _num(value) -> str:
    """A number as a sentence says it: 3 significant digits, thousands separated, '4,096' not '4.1e+03'.

    >>> _num(4096), _num(52.04), _num(0.5), _num(2.5e-5), _num(3.2e13)
    ('4,096', '52', '0.5', '2.5e-05', '3.2e+13')
    """
    value = float(value)
    if not math.isfinite(value):
        return "n/a"
    if value != 0 and (abs(value) >= 1e12 or abs(value) < 1e-3):
        return f"{value:.3g}"
    if abs(value) >= 1000:
        return f"{float(f'{value:.3g}'):,.0f}" if abs(value) >= 1e4 else f"{value:,.0f}"
    return f"{value:.3g}"


def js_number_key(value: float) -> str:
    """``value`` as JavaScript's ``String(number)`` writes it: the key bqplot looks a tick label up by.

    >>> [js_number_key(v) for v in (1e12, 1.0, 1e-3, 1e-6, 1e-7, 2.5, 128)]
    ['1000000000000', '1', '0.001', '0.000001', '1e-7', '2.5', '128']
    """
    value = float(value)
    if value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    if 1e-6 <= abs(value) < 1e21:
        return repr(value) if "e" not in repr(value) else f"{value:.15f}".rstrip("0")
    mantissa, exponent = f"{value:.15e}".split("e")
    return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"


def decade_ticks(low: float, high: float, max_ticks: int = 7, strides=(1, 3, 6, 12)) -> list[float]:
    """Powers of ten from ``low`` to ``high`` (inside the range), every 1st, 3rd or 6th decade (``strides``) so
    that at most ``max_ticks`` show (every 3rd: 1 kB, 1 MB, 1 GB).

    >>> decade_ticks(3e3, 2e6)
    [10000.0, 100000.0, 1000000.0]
    >>> decade_ticks(1e3, 3e12)
    [1000.0, 1000000.0, 1000000000.0, 1000000000000.0]
    >>> decade_ticks(1e-2, 1e3, max_ticks=5, strides=(1, 2, 3))  # a time axis: 10 ms, 1 s, 100 s
    [0.01, 1.0, 100.0]
    """
    if not (low > 0 and high >= low):
        raise ValueError(f"low and high must satisfy 0 < low <= high, got {low!r}, {high!r}")
    first = math.ceil(math.log10(low) - 1e-9)
    last = math.floor(math.log10(high) + 1e-9)
    for stride in strides:
        ks = [k for k in range(first, last + 1) if k % stride == 0]
        if len(ks) <= max_ticks:
            break
    return [10.0 ** k for k in ks]


def integer_ticks(low: float, high: float, count: int = 7) -> list[int]:
    """Powers of two from ``low`` to ``high`` (every ``k``-th, at most about ``count``): a log axis of counts.

    >>> integer_ticks(1, 1024)
    [1, 4, 16, 64, 256, 1024]
    >>> integer_ticks(2, 10_000)
    [2, 8, 32, 128, 512, 2048, 8192]
    """
    exponents = range(math.floor(math.log2(max(low, 1))), math.ceil(math.log2(max(high, 1))) + 1)
    stride = max(1, math.ceil(len(exponents) / count))
    return [2 ** k for k in exponents[::stride]]


def set_ticks(axis: bq.Axis, values, formatter=None) -> None:
    """Put ticks at ``values``, each labelled ``formatter(value)`` (default: the number, 1,024 style).

    The labels go first, in a message of their own, and keep the labels of earlier ticks: bqplot
    draws new ``tick_values`` with the label table it holds at that moment (in a transition that
    lands after any later redraw), so ticks sent with, or before, their labels were drawn in d3's
    default format ("1e+1" beside "1 s") after a few slider moves.
    """
    formatter = formatter or (lambda v: f"{v:,.0f}" if float(v).is_integer() else f"{v:g}")
    values = [float(v) for v in values]
    labels = {**(axis.tick_labels or {}), **{js_number_key(v): formatter(v) for v in values}}
    if axis.tick_labels != labels:
        axis.tick_labels = labels  # one message, before the ticks that need them
    if list(axis.tick_values if axis.tick_values is not None else []) != values:
        axis.tick_values = values


def segments(x0, x1, y0, y1=None) -> tuple[np.ndarray, np.ndarray]:
    """Segments (x0, y0)-(x1, y1) as ONE series broken by NaN: ``bq.Lines(x=..., y=...)`` draws them as one path.

    A Lines mark given 2-D ``x``/``y`` draws every row as its own curve (an SVG group with a path, an
    area, a label and a transition each): a 16-stage pipeline of 32 micro-batches is a thousand of
    them to rebuild on every slider move. bqplot leaves a gap where ``y`` is not finite, so the
    same picture is one path. ``y1`` defaults to ``y0`` (horizontal bars of a timeline).

    >>> x, y = segments([0, 2], [1, 3], [5, 6])
    >>> x.tolist(), y.tolist()[:3], int(segment_count(y))
    ([0.0, 1.0, nan, 2.0, 3.0, nan], [5.0, 5.0, nan], 2)
    """
    x0, x1 = np.asarray(x0, dtype=float).ravel(), np.asarray(x1, dtype=float).ravel()
    y0 = np.asarray(y0, dtype=float).ravel()
    y1 = y0 if y1 is None else np.asarray(y1, dtype=float).ravel()
    gap = np.full(x0.size, np.nan)
    return np.stack([x0, x1, gap], axis=1).ravel(), np.stack([y0, y1, gap], axis=1).ravel()


def segment_count(y) -> int:
    """Runs of finite values in a NaN-separated series (:func:`segments`): how many pieces a line has."""
    finite = np.isfinite(np.asarray(y, dtype=float).ravel())
    return int(np.count_nonzero(finite[1:] & ~finite[:-1]) + (1 if finite.size and finite[0] else 0))


def _axis_phrases(fig: bq.Figure) -> dict[int, str]:
    """``id(scale) -> "label (log scale)"`` for each axis of ``fig`` (read once per description: traits are slow)."""
    phrases = {}
    for axis in fig.axes:
        scale = axis.scale
        kind = " (log scale)" if isinstance(scale, bq.LogScale) else ""
        phrases[id(scale)] = f"{axis.label or ''}{kind}".strip()
    return phrases


def _axis_phrase(fig: bq.Figure, scale) -> str:
    return _axis_phrases(fig).get(id(scale), "")


def _labels(mark) -> list[str]:
    return [str(label) for label in (getattr(mark, "labels", None) or [])]


def _series(values) -> np.ndarray:
    return np.atleast_1d(np.asarray(values, dtype=float))


def _describe_lines(mark: bq.Lines, x_name: str, y_name: str) -> list[str]:
    x, y = np.asarray(mark.x, dtype=float), np.asarray(mark.y, dtype=float)
    if y.size == 0:
        return []
    ys = y if y.ndim == 2 else y[None, :]
    xs = x if x.ndim == 2 else np.broadcast_to(x, ys.shape)
    labels = _labels(mark)
    if len(ys) > MAX_POINTS_LISTED:
        return [f"{len(ys)} line segments{(' (' + labels[0] + ')') if labels else ''}"]
    parts = []
    for i, (xi, yi) in enumerate(zip(xs, ys)):
        pieces = segment_count(yi)  # NaN-separated segments (:func:`segments`): a timeline says how many
        if pieces > 1:
            parts.append(f"{pieces} line segments{(' (' + labels[i] + ')') if i < len(labels) else ''}")
            continue
        keep = np.isfinite(xi) & np.isfinite(yi)
        xi, yi = xi[keep], yi[keep]
        if yi.size == 0:
            continue
        name = labels[i] if i < len(labels) else (f"line {i + 1}" if len(ys) > 1 else "line")
        if yi.size == 2 and yi[0] == yi[1]:
            parts.append(f"{name}: level at {y_name} = {_num(yi[0])}")
            continue
        if xi.size == 2 and xi[0] == xi[1]:
            parts.append(f"{name}: vertical line at {x_name} = {_num(xi[0])}")
            continue
        text = f"{name}: {_num(yi[0])} at {x_name} = {_num(xi[0])} to {_num(yi[-1])} at {_num(xi[-1])}"
        top = int(np.argmax(yi))
        if 0 < top < yi.size - 1:
            text += f", highest {_num(yi[top])} at {_num(xi[top])}"
        parts.append(text)
    return parts


def _describe_scatter(mark: bq.Scatter, x_name: str, y_name: str) -> list[str]:
    x, y = _series(mark.x), _series(mark.y)
    if x.size == 0:
        return []
    labels = _labels(mark)
    name = labels[0] if labels else "points"
    points = ", ".join(f"({_num(a)}, {_num(b)})" for a, b in zip(x[:MAX_POINTS_LISTED], y[:MAX_POINTS_LISTED]))
    more = f" and {x.size - MAX_POINTS_LISTED} more" if x.size > MAX_POINTS_LISTED else ""
    return [f"{name} at ({x_name}, {y_name}) = {points}{more}"]


def _describe_bars(mark: bq.Bars, x_name: str, y_name: str) -> list[str]:
    names = [str(v) for v in np.atleast_1d(np.asarray(mark.x, dtype=object))]
    y = np.asarray(mark.y, dtype=float)
    if y.size == 0:
        return []
    if y.ndim == 2:  # stacked: one row per labelled part
        labels = _labels(mark)
        totals = y.sum(axis=0)
        parts = []
        for j, name in enumerate(names[:MAX_POINTS_LISTED]):
            pieces = ", ".join(f"{labels[i] if i < len(labels) else i} {_num(y[i, j])}" for i in range(y.shape[0]))
            parts.append(f"{name}: {_num(totals[j])} in total ({pieces})")
        return parts
    base = float(np.asarray(getattr(mark, "base", 0.0) or 0.0))
    return [f"{name}: {_num(v)}" if v > base or base == 0 else f"{name}: none"
            for name, v in zip(names[:MAX_POINTS_LISTED], y)]


def _describe_grid(mark, x_name: str, y_name: str) -> list[str]:
    """A GridHeatMap or HeatMap; cells holding the mark's ``_course_empty`` value (if set) are counted as empty."""
    color = np.asarray(mark.color, dtype=float)
    empty_value = getattr(mark, "_course_empty", None)
    empty = color == empty_value if empty_value is not None else np.zeros(color.shape, dtype=bool)
    shown = np.where(empty, np.nan, color)
    if color.size == 0 or not np.isfinite(shown).any():
        return []
    return [f"a grid of {color.shape[0]} rows by {color.shape[1]} columns, values from "
            f"{_num(np.nanmin(shown))} to {_num(np.nanmax(shown))}"
            + (f", {int(empty.sum())} cells empty" if empty.any() else "")]


def _describe_label(mark: bq.Label, x_name: str, y_name: str) -> list[str]:
    raw = mark.text if mark.text is not None else []
    texts = [str(t) for t in np.atleast_1d(np.asarray(raw, dtype=object)).ravel() if str(t).strip()]
    if not texts or len(texts) > MAX_POINTS_LISTED:
        return []
    return ["labelled " + "; ".join(f"'{t}'" for t in texts)]


def describe_mark(fig: bq.Figure, mark, phrases: dict[int, str] | None = None) -> list[str]:
    """Sentences (one per series) saying what one mark shows, from its current data."""
    if not getattr(mark, "visible", True):
        return []
    phrases = _axis_phrases(fig) if phrases is None else phrases
    scales = mark.scales
    x_name = phrases.get(id(scales.get("x") or scales.get("column")), "") or "x"
    y_name = phrases.get(id(scales.get("y") or scales.get("row")), "") or "y"
    for kind, describe in ((bq.Bars, _describe_bars), (bq.Lines, _describe_lines), (bq.Scatter, _describe_scatter),
                           (bq.GridHeatMap, _describe_grid), (bq.HeatMap, _describe_grid), (bq.Label, _describe_label)):
        if isinstance(mark, kind):
            return describe(mark, x_name.split(" (")[0], y_name.split(" (")[0])
    return []


def describe_figure(fig: bq.Figure) -> str:
    """The chart in words: its title, its axes, and what each mark shows now.

    >>> xs, ys = bq.LinearScale(), bq.LinearScale()
    >>> line = bq.Lines(x=[1, 2, 3], y=[10, 30, 20], labels=["model"], scales={"x": xs, "y": ys})
    >>> fig = bq.Figure(marks=[line], axes=[bq.Axis(scale=xs, label="GPUs"),
    ...                 bq.Axis(scale=ys, label="MFU (%)", side="left")], title="MFU")
    >>> describe_figure(fig)
    'Chart: MFU. Horizontal axis: GPUs; vertical axis: MFU (%). model: 10 at GPUs = 1 to 20 at 3, highest 30 at 2.'
    """
    phrases = _axis_phrases(fig)
    axes = [a for a in fig.axes if getattr(a, "visible", True) and a.label and isinstance(a, bq.Axis)
            and not isinstance(a, bq.ColorAxis)]
    vertical = [a for a in axes if a.side in ("left", "right")]
    horizontal = [a for a in axes if a not in vertical]
    parts = [f"Chart: {fig.title or 'untitled'}."]
    axis_text = "; ".join(
        [f"horizontal axis: {phrases[id(a.scale)]}" for a in horizontal]
        + [f"vertical axis: {phrases[id(a.scale)]}" for a in vertical])
    if axis_text:
        parts.append(axis_text[0].upper() + axis_text[1:] + ".")
    sentences = [s for mark in fig.marks for s in describe_mark(fig, mark, phrases)]
    if sentences:
        parts.append("; ".join(sentences) + ".")
    else:
        parts.append("No data shown.")
    return " ".join(parts)


def legend_entries(marks) -> list[tuple[str, str, str]]:
    """``(label, css colour, swatch kind)`` for each labelled series of ``marks`` the chart shows (a hidden mark,
    ``visible=False``, has no entry: the legend names only what is drawn).

    The kind is what the chart draws: ``line`` or ``dashed`` for a Lines mark (dotted and dash-dotted
    lines are ``dashed``), ``box`` for bars and filled areas (a Lines mark with ``fill``, e.g. bars drawn as one
    path), and a Scatter mark's own ``marker`` ("circle", "diamond",
    "cross"...), so the legend draws a cross where the chart draws one.
    """
    entries = []
    for mark in marks:
        if getattr(mark, "visible", True) is False:
            continue
        labels = _labels(mark)
        colors = list(getattr(mark, "colors", None) or ["currentColor"])
        if isinstance(mark, bq.Bars) or getattr(mark, "fill", "none") in ("bottom", "top", "between", "inside"):
            kind = "box"
        elif isinstance(mark, bq.Scatter):
            kind = str(mark.marker)
        else:
            kind = "dashed" if getattr(mark, "line_style", "solid") in ("dashed", "dotted", "dash_dotted") else "line"
        for i, label in enumerate(labels):
            entries.append((label, colors[i % len(colors)], kind))
    return entries


#: A swatch's shape for each bqplot Scatter marker (SVG inside a 16 x 14 box), drawn as d3's symbols are:
#: the diamond is taller than wide, the cross is a plus of five squares. Other markers are drawn as circles.
_MARKER_SHAPES = {
    "circle": "<circle cx='8' cy='7' r='4.5'{style}/>",
    "diamond": "<path d='M8 1.5 L11.5 7 L8 12.5 L4.5 7 Z'{style}/>",
    "cross": "<path d='M6.3 2 H9.7 V5.3 H13 V8.7 H9.7 V12 H6.3 V8.7 H3 V5.3 H6.3 Z'{style}/>",
    "square": "<rect x='3.5' y='2.5' width='9' height='9'{style}/>",
    "triangle-up": "<path d='M8 2 L13 12 L3 12 Z'{style}/>",
    "triangle-down": "<path d='M3 2 L13 2 L8 12 Z'{style}/>",
}


def _swatch(kind: str, colour: str, stroke: str | None = None) -> str:
    """An inline SVG that draws one legend entry as the chart draws its mark (theme colours as CSS)."""
    c = html.escape(colour, quote=True)
    if kind in ("line", "dashed"):
        dash = " stroke-dasharray='4 3'" if kind == "dashed" else ""
        body = f"<line x1='0' y1='7' x2='16' y2='7' stroke-width='3'{dash} style='stroke:{c}'/>"
    elif kind == "box":
        body = f"<rect x='2.5' y='1.5' width='11' height='11' style='fill:{c}'/>"
    else:
        outline = f";stroke:{html.escape(stroke, quote=True)};stroke-width:1.5" if stroke else ""
        body = _MARKER_SHAPES.get(kind, _MARKER_SHAPES["circle"]).format(style=f" style='fill:{c}{outline}'")
    return (f"<svg class='course-legend-svg course-legend-{html.escape(kind, quote=True)}' width='16' height='14' "
            f"viewBox='0 0 16 14' aria-hidden='true' focusable='false' style='flex:none;overflow:visible'>{body}</svg>")


def legend_html(marks) -> str:
    """A legend (a swatch drawn like the mark, then its label, per series) to show under a figure, in the theme's colours."""
    items = []
    for mark in marks:
        stroke = getattr(mark, "stroke", None) if isinstance(mark, bq.Scatter) else None
        for label, colour, kind in legend_entries([mark]):
            items.append(f"<span class='course-legend-item'>{_swatch(kind, colour, stroke)}{html.escape(label)}</span>")
    return f"<div class='course-legend'>{''.join(items)}</div>" if items else ""
