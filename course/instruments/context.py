"""Hardware context for instruments: link choices and the Cloud/Edge/Mobile/Tiny track selector.

Every number (bandwidth, latency, hardware, model) comes from
``course.core.catalog``; this module only turns catalog entries (``Link``,
``Track``) into widget options.
"""

from __future__ import annotations

import html
from typing import Any, Iterable

import ipywidgets as widgets

from ..core import catalog
from ..core.catalog import Link
from ..theme import theme_css

__all__ = ["link_options", "find_link", "TrackSelector", "TRACK_NAMES", "TRACK_LINKS", "gpu_cluster_only"]

TRACK_NAMES = ("Cloud", "Edge", "Mobile", "Tiny")

# Catalog names tried, in display order, for the communication instruments
# (Lab 06 compares InfiniBand HDR/NDR ports with NVLink inside a node).
DEFAULT_LINKS = ("InfiniBand NDR", "InfiniBand HDR", "InfiniBand XDR", "NVLink 4", "Ethernet 100G",
                 "Ethernet 400G")


#: Links offered per track (the track's own catalog link first): the Lab 05 plan's
#: deployment contexts, Edge cars on 5G or a depot's Ethernet, phones on 5G or Bluetooth LE,
#: hearables on Bluetooth LE only. Cloud keeps the instrument's own choices.
TRACK_LINKS = {"Edge": ("5G", "Ethernet 10G"), "Mobile": ("5G", "Bluetooth LE"), "Tiny": ("Bluetooth LE",)}


def link_options(names: Iterable[str] | None = None) -> list[tuple[str, Link]]:
    """``(label, Link)`` pairs for a Dropdown, from ``catalog.LINKS``.

    ``names`` picks catalog keys (default: :data:`DEFAULT_LINKS` then every
    other catalog link, 5G, Bluetooth LE... for the edge tracks). An unknown
    name raises ``ValueError`` naming the keys the catalog has.
    """
    wanted = list(names) if names is not None else list(DEFAULT_LINKS)
    unknown = [n for n in wanted if n not in catalog.LINKS]
    if unknown or not wanted:
        raise ValueError(f"names must be catalog link keys; known: {sorted(catalog.LINKS)}, got {wanted!r}")
    chosen = [catalog.LINKS[n] for n in wanted]
    if names is None:
        chosen += [link for key, link in catalog.LINKS.items() if key not in wanted]
    return [(f"{link.name} ({_rate(link.bandwidth)}, {_latency(link.latency)})", link) for link in chosen]


def _rate(bytes_per_s: float) -> str:
    for unit, size in (("GB/s", 1e9), ("MB/s", 1e6), ("kB/s", 1e3)):
        if bytes_per_s >= size:
            return f"{bytes_per_s / size:.3g} {unit}"
    return f"{bytes_per_s:.3g} B/s"


def _latency(seconds: float) -> str:
    return f"{seconds * 1e6:.3g} µs" if seconds < 1e-3 else f"{seconds * 1e3:.3g} ms"


def find_link(options: list[tuple[str, Link]], name: str) -> Link:
    """The option whose link has this catalog name (case/spacing-insensitive)."""
    key = "".join(ch for ch in name.lower() if ch.isalnum())
    for _label, link in options:
        if "".join(ch for ch in link.name.lower() if ch.isalnum()) == key:
            return link
    raise ValueError(f"link must be one of {[link.name for _, link in options]}, got {name!r}")


def gpu_cluster_only(what: str, track: Any) -> str | None:
    """Banner text for an instrument that models only GPU clusters (``None`` for Cloud).

    Used by the data-parallel, 3D-parallel and cost instruments, whose core
    models (NVLink nodes, InfiniBand fabrics, GPU-hour prices) have no meaning
    for a Jetson over 5G or a microcontroller over Bluetooth LE.
    """
    if track is None or track.name == "Cloud":
        return None
    return (f"The {what} models GPU clusters (NVLink nodes on an InfiniBand fabric); the {track.name} "
            f"track's {track.accelerator.name} over {track.link.name} is outside it, so it shows no numbers. Switch back to "
            f"Cloud, or use the all-reduce instruments, which follow the track's link.")


class TrackSelector:
    """Context/track selector: Cloud, Edge, Mobile, Tiny (values from ``catalog.TRACKS``).

    ``selector.value`` is the track name, ``selector.track`` the catalog entry
    (hardware, links, model of that deployment context); ``selector.observe(fn)``
    calls ``fn(track_name)`` on change.
    """

    def __init__(self, value: str = "Cloud"):
        self.tracks = dict(catalog.TRACKS)
        names = [n for n in TRACK_NAMES if n in self.tracks] + [n for n in self.tracks if n not in TRACK_NAMES]
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
    def track(self) -> catalog.Track:
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
        parts = [f"<b>persona</b>: {html.escape(entry.persona)}",
                 f"<b>accelerator</b>: {html.escape(entry.accelerator.name)}",
                 f"<b>link</b>: {html.escape(entry.link.name)}", f"<b>model</b>: {html.escape(entry.model.name)}",
                 f"<b>devices</b>: {entry.devices:,}"]
        story = entry.story
        self.note.value = (f"{theme_css()}<div class='course-ui' style='font-size:0.85rem'>" + " · ".join(parts)
                           + (f"<div><i>{html.escape(story)}</i></div>" if story else "") + "</div>")

    def _changed(self, _change) -> None:
        self._describe()
        for callback in self._callbacks:
            callback(self.value)

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)
