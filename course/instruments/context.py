"""Hardware context for instruments: link choices and the Cloud/Edge/Mobile/Tiny track selector.

Every number (bandwidth, latency, hardware, model) comes from
``course.core.catalog``; this module only turns catalog entries into widget
options. Link objects are read through :func:`link_bandwidth` and
:func:`link_latency`, which accept the catalog's ``Link`` dataclass.
"""

from __future__ import annotations

import html
from typing import Any, Iterable

import ipywidgets as widgets

__all__ = ["link_options", "find_link", "link_bandwidth", "link_latency", "TrackSelector", "TRACK_NAMES",
           "TRACK_LINKS", "gpu_cluster_only"]

TRACK_NAMES = ("Cloud", "Edge", "Mobile", "Tiny")

# Catalog names tried, in display order, for the communication instruments
# (Lab 06 compares InfiniBand HDR/NDR ports with NVLink inside a node).
DEFAULT_LINKS = ("InfiniBand NDR", "InfiniBand HDR", "InfiniBand XDR", "NVLink 4", "Ethernet 100G",
                 "Ethernet 400G")


#: Links offered per track (the track's own catalog link first): the Lab 05 plan's
#: deployment contexts, Edge cars on 5G or a depot's Ethernet, phones on 5G or Bluetooth LE,
#: hearables on Bluetooth LE only. Cloud keeps the instrument's own choices.
TRACK_LINKS = {"Edge": ("5G", "Ethernet 10G"), "Mobile": ("5G", "Bluetooth LE"), "Tiny": ("Bluetooth LE",)}


def _catalog():
    from ..core import catalog

    return catalog


def _field(obj: Any, *names: str) -> Any:
    for name in names:
        if isinstance(obj, dict) and name in obj:
            return obj[name]
        if hasattr(obj, name):
            return getattr(obj, name)
    raise AttributeError(f"{obj!r} has none of {names}")


def link_bandwidth(link: Any) -> float:
    """Bytes/s per direction of a catalog link."""
    return float(_field(link, "bandwidth", "bandwidth_bytes_per_s", "bw"))


def link_latency(link: Any) -> float:
    """One-way latency in seconds of a catalog link (0 if the catalog gives none)."""
    try:
        return float(_field(link, "latency", "latency_s"))
    except AttributeError:
        return 0.0


def _all_links() -> dict[str, Any]:
    catalog = _catalog()
    table = getattr(catalog, "LINKS", None)
    if isinstance(table, dict) and table:
        return dict(table)
    found = {}
    link_type = getattr(catalog, "Link", None)
    for name in dir(catalog):
        obj = getattr(catalog, name)
        if link_type is not None and isinstance(obj, link_type):
            found[getattr(obj, "key", name)] = obj
    return found


def link_options(names: Iterable[str] | None = None) -> list[tuple[str, Any]]:
    """``(label, Link)`` pairs for a Dropdown, from the catalog.

    ``names`` picks catalog keys (default: InfiniBand, NVLink and Ethernet
    ports; those absent from the catalog are skipped). Raises ``ValueError``
    when none is found, naming the keys the catalog has.
    """
    table = _all_links()
    wanted = list(names) if names is not None else list(DEFAULT_LINKS)
    chosen = []
    for name in wanted:
        link = table.get(name)
        if link is None:
            lookup = getattr(_catalog(), "link", None)
            if callable(lookup):
                try:
                    link = lookup(name)
                except (ValueError, KeyError):
                    link = None
        if link is not None:
            chosen.append(link)
    if names is None:  # then every other catalog link (5G, Bluetooth LE... for the edge tracks)
        chosen += [link for link in table.values() if all(link is not c for c in chosen)]
    if not chosen:
        raise ValueError(f"names must be catalog link keys; known: {sorted(table)}")
    options = []
    for link in chosen:
        label = str(_field(link, "name"))
        options.append((f"{label} ({_rate(link_bandwidth(link))}, {_latency(link_latency(link))})", link))
    return options


def _rate(bytes_per_s: float) -> str:
    for unit, size in (("GB/s", 1e9), ("MB/s", 1e6), ("kB/s", 1e3)):
        if bytes_per_s >= size:
            return f"{bytes_per_s / size:.3g} {unit}"
    return f"{bytes_per_s:.3g} B/s"


def _latency(seconds: float) -> str:
    return f"{seconds * 1e6:.3g} µs" if seconds < 1e-3 else f"{seconds * 1e3:.3g} ms"


def find_link(options: list[tuple[str, Any]], name: str) -> Any:
    """The option whose link has this catalog name (case/spacing-insensitive)."""
    key = "".join(ch for ch in name.lower() if ch.isalnum())
    for _label, link in options:
        if "".join(ch for ch in str(_field(link, "name")).lower() if ch.isalnum()) == key:
            return link
    raise ValueError(f"link must be one of {[str(_field(l, 'name')) for _, l in options]}, got {name!r}")


def gpu_cluster_only(what: str, track: Any) -> str | None:
    """Banner text for an instrument that models only GPU clusters (``None`` for Cloud).

    Used by the data-parallel, 3D-parallel and cost instruments, whose core
    models (NVLink nodes, InfiniBand fabrics, GPU-hour prices) have no meaning
    for a Jetson over 5G or a microcontroller over Bluetooth LE.
    """
    if track is None or getattr(track, "name", "Cloud") == "Cloud":
        return None
    accelerator = getattr(getattr(track, "accelerator", None), "name", "this hardware")
    link = getattr(getattr(track, "link", None), "name", "its link")
    return (f"The {what} models GPU clusters (NVLink nodes on an InfiniBand fabric); the {track.name} "
            f"track's {accelerator} over {link} is outside it, so it shows no numbers. Switch back to "
            f"Cloud, or use the all-reduce instruments, which follow the track's link.")


class TrackSelector:
    """Context/track selector: Cloud, Edge, Mobile, Tiny (values from ``catalog.TRACKS``).

    ``selector.value`` is the track name, ``selector.track`` the catalog entry
    (hardware, links, model of that deployment context); ``selector.observe(fn)``
    calls ``fn(track_name)`` on change.
    """

    def __init__(self, value: str = "Cloud"):
        tracks = getattr(_catalog(), "TRACKS", None) or {}
        self.tracks = dict(tracks)
        names = [n for n in TRACK_NAMES if n in self.tracks] + [n for n in self.tracks if n not in TRACK_NAMES]
        if not names:
            names = list(TRACK_NAMES)
        if value not in names:
            raise ValueError(f"value must be one of {names}, got {value!r}")
        self.buttons = widgets.ToggleButtons(options=names, value=value, description="Context")
        self.note = widgets.HTML()
        self.widget = widgets.VBox([self.buttons, self.note])
        self.widget.add_class("course-track-selector")
        self._callbacks = []
        self.buttons.observe(self._changed, names="value")
        self._describe()

    @property
    def value(self) -> str:
        return self.buttons.value

    @value.setter
    def value(self, name: str) -> None:
        self.buttons.value = name

    @property
    def track(self) -> Any:
        return self.tracks.get(self.value)

    def observe(self, callback) -> None:
        self._callbacks.append(callback)

    def link_to(self, *instruments) -> "TrackSelector":
        """Make each instrument follow this selector (``Instrument.follow``); returns the selector."""
        for instrument in instruments:
            instrument.follow(self)
        return self

    def _describe(self) -> None:
        entry = self.track
        if entry is None:
            self.note.value = "<i>This track's hardware is not in the catalog yet.</i>"
            return
        parts = []
        for key in ("persona", "accelerator", "link", "model", "devices"):
            val = getattr(entry, key, None)
            if val is not None:
                parts.append(f"<b>{key}</b>: {html.escape(str(getattr(val, 'name', val)))}")
        story = getattr(entry, "story", "")
        self.note.value = ("<div style='font-size:0.85rem'>" + " · ".join(parts)
                           + (f"<div><i>{html.escape(story)}</i></div>" if story else "") + "</div>")

    def _changed(self, _change) -> None:
        self._describe()
        for callback in self._callbacks:
            callback(self.value)

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)
