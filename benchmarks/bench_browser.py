"""Keyboard slider move -> chart redrawn, in real JupyterLab and headless Chromium, for every instrument.

    .venv/bin/python benchmarks/bench_browser.py [--moves 50] [--only ScalingExplorer,SyncAudit]

Starts a JupyterLab server of its own (the browser tests' ``start_lab_server``: free
port, random token, temporary root, config and ledger), writes a notebook with one cell
per :class:`~course.instruments.Instrument` subclass (found automatically, as
``bench_instruments.py`` finds them), runs it in Debian's ``/usr/bin/chromium`` through
Playwright (never ``playwright install``), then, for every slider of every instrument,
focuses the slider's handle and presses an arrow key ``--moves`` times (right until the
slider's maximum, then left). One move is timed from the ``keydown`` event (a capturing
listener on the document) to the **last** DOM mutation inside the instrument's charts
(``.bqplot``, watched by a ``MutationObserver``), the chart being considered settled when
nothing changed for ``--quiet-ms``. That span holds the widget message to the kernel,
the instrument's update, the messages back and every redraw bqplot makes.

Prints, per instrument, the median and the 95th percentile over all moves of all its
sliders against the 50 ms target, the median time to the *first* chart change (the rest
of a move is the redraws after it), and the moves that redrew nothing (a slider that
moves only a card, or a value the chart does not show); ``--per-slider`` adds one line
per slider. ``msgs/move`` counts the widget (``comm_msg``) messages the kernel sent per move, read
off the kernel's websocket (the slider's echo included; ``widgets``: how many distinct widgets they
touched): unlike the times it does not depend on the machine's load. No assertions: figures are for
the report (quote them with ``uptime``).
"""

from __future__ import annotations

import argparse
import importlib
import json
import struct
import inspect
import os
import pkgutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.browser.conftest import (CHROMIUM, CHROMIUM_ARGS, open_notebook_page, run_all_cells,  # noqa: E402
                                    start_lab_server)

TARGET_MS = 50.0

# One recorder per page: the keydown that starts a move and the last mutation inside the watched charts.
INSTALL = """() => {
    window.__move = {start: null, first: null, last: null, mutations: 0};
    document.addEventListener('keydown', () => {
        const m = window.__move;
        if (m.start === null) m.start = performance.now();
    }, true);
    window.__watch = (selector) => {
        if (window.__observer) window.__observer.disconnect();
        window.__observer = new MutationObserver(() => {
            const m = window.__move;
            if (m.start !== null) {
                m.last = performance.now();
                if (m.first === null) m.first = m.last;
                m.mutations += 1;
            }
        });
        for (const chart of document.querySelectorAll(selector + ' .bqplot')) {
            window.__observer.observe(chart, {attributes: true, subtree: true, childList: true, characterData: true});
        }
    };
}"""

ARM = "() => { window.__move = {start: null, first: null, last: null, mutations: 0}; }"

# 'redrawn' once the charts have been quiet for quiet_ms after a change, 'none' when nothing changed at all
SETTLED = """([quiet, nothing]) => {
    const m = window.__move, now = performance.now();
    if (m.start === null) return false;
    if (m.last === null) return now - m.start > nothing ? 'none' : false;
    return now - m.last > quiet ? 'redrawn' : false;
}"""


class CommCounter:
    """Counts the widget messages on the kernel's websocket, both ways, as the browser sees them.

    Kernel -> browser ``comm_msg`` frames are what the page has to apply (and bqplot to redraw);
    browser -> kernel ones are the slider's own update. Independent of the machine's load. Frames are
    parsed in both of Jupyter's websocket protocols: JSON text (legacy) and
    ``v1.kernel.websocket.jupyter.org`` binary (offsets, then channel, header, parent header, ...).
    """

    def __init__(self):
        self.received = 0
        self.sent = 0
        self.widgets: set[str] = set()

    def reset(self):
        self.received, self.sent, self.widgets = 0, 0, set()

    @staticmethod
    def _parse(payload):
        """(msg_type, comm_id) of one frame, or None."""
        try:
            if isinstance(payload, str):
                msg = json.loads(payload)
                return msg["header"]["msg_type"], msg.get("content", {}).get("comm_id")
            (count,) = struct.unpack_from("<Q", payload, 0)
            offsets = struct.unpack_from(f"<{count}Q", payload, 8)
            header = json.loads(payload[offsets[1]:offsets[2]])
            content = json.loads(payload[offsets[4]:offsets[5]]) if count > 5 else {}
            return header["msg_type"], content.get("comm_id")
        except Exception:  # noqa: BLE001 - a frame we cannot read is not a widget message
            return None

    def attach(self, page):
        def on_socket(ws):
            if "/channels" not in ws.url:
                return
            ws.on("framereceived", self._on_received)
            ws.on("framesent", self._on_sent)
        page.on("websocket", on_socket)

    def _on_received(self, payload):
        parsed = self._parse(payload)
        if parsed and parsed[0] == "comm_msg":
            self.received += 1
            self.widgets.add(parsed[1])

    def _on_sent(self, payload):
        parsed = self._parse(payload)
        if parsed and parsed[0] == "comm_msg":
            self.sent += 1


def instrument_classes() -> dict[str, type]:
    """Every Instrument subclass in ``course.instruments``, by class name."""
    import course.instruments as package
    from course.instruments.base import Instrument

    found = {}
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, Instrument) and cls is not Instrument and cls.__module__ == module.__name__:
                found[name] = cls
    return found


def write_notebook(path: Path, classes: dict[str, type]) -> None:
    """One cell per instrument; each widget carries the class ``bench-<Name>`` for the selectors."""
    cells = [nbformat.v4.new_code_cell("import course.instruments as instruments")]
    for name, cls in classes.items():
        cells.append(nbformat.v4.new_code_cell(
            f"bench_{name} = instruments.{name}()  # {cls.__module__}\n"
            f"bench_{name}.widget.add_class('bench-{name}')\n"
            f"bench_{name}"))
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nbformat.write(nb, str(path))


def slider_names(page, selector: str) -> list[str]:
    """Names of the controls of one instrument that are sliders (they have a noUiSlider handle)."""
    return page.evaluate("""(sel) => [...document.querySelectorAll(sel + ' [class*="course-control-"]')]
        .filter(el => el.querySelector('.noUi-handle'))
        .map(el => [...el.classList].find(c => c.startsWith('course-control-')).slice('course-control-'.length))""",
                         selector)


def move_slider(page, selector: str, control: str, moves: int, quiet_ms: float, nothing_ms: float,
                counter: CommCounter):
    """``moves`` arrow-key presses on one slider.

    Returns (latencies to the last chart change in ms, latencies to the first one, moves that redrew nothing,
    kernel -> browser widget messages per move, widgets they touched per move).
    """
    handle = page.locator(f"{selector} .course-control-{control} .noUi-handle").first
    handle.scroll_into_view_if_needed()
    handle.focus()
    latencies, firsts, unchanged, messages, touched = [], [], 0, [], []
    key = "ArrowRight"
    for _ in range(moves):
        now, low, high = (float(handle.get_attribute(a) or 0) for a in ("aria-valuenow", "aria-valuemin",
                                                                          "aria-valuemax"))
        if now >= high:
            key = "ArrowLeft"
        elif now <= low:
            key = "ArrowRight"
        page.evaluate(ARM)
        counter.reset()
        page.keyboard.press(key)
        state = page.wait_for_function(SETTLED, arg=[quiet_ms, nothing_ms], polling=5, timeout=60_000).json_value()
        messages.append(counter.received)
        touched.append(len(counter.widgets))
        if state == "none":
            unchanged += 1
            continue
        move = page.evaluate("() => window.__move")
        latencies.append(move["last"] - move["start"])
        firsts.append(move["first"] - move["start"])
    return latencies, firsts, unchanged, messages, touched


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--moves", type=int, default=50, help="key presses per slider")
    parser.add_argument("--quiet-ms", type=float, default=250.0,
                        help="a chart quiet this long after its last change has finished redrawing")
    parser.add_argument("--nothing-ms", type=float, default=1500.0,
                        help="a move that changed no chart within this long redrew nothing")
    parser.add_argument("--only", default="", help="comma-separated instrument class names")
    parser.add_argument("--per-slider", action="store_true", help="print one line per slider too")
    args = parser.parse_args(argv)
    if not CHROMIUM.exists():
        sys.exit("/usr/bin/chromium is missing (apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    classes = instrument_classes()
    if args.only:
        wanted = set(args.only.split(","))
        classes = {name: cls for name, cls in classes.items() if name in wanted}
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-browser-") as tmp, start_lab_server(Path(tmp)) as server, \
            sync_playwright() as pw:
        write_notebook(server.root / "bench_instruments.ipynb", classes)
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            counter = CommCounter()
            context.on("page", counter.attach)  # before the notebook's page opens its kernel websocket
            page = open_notebook_page(server, context, "bench_instruments.ipynb")
            run_all_cells(page)
            page.evaluate(INSTALL)
            for name in classes:
                selector = f".bench-{name}"
                page.locator(f"{selector} .bqplot svg").first.wait_for(timeout=60_000)
                page.evaluate("(sel) => window.__watch(sel)", selector)
                started = time.perf_counter()
                latencies, firsts, unchanged, per_slider, messages, touched = [], [], 0, [], [], []
                for control in slider_names(page, selector):
                    lat, first, none, msgs, widgets = move_slider(page, selector, control, args.moves,
                                                                  args.quiet_ms, args.nothing_ms, counter)
                    latencies += lat
                    firsts += first
                    unchanged += none
                    messages += msgs
                    touched += widgets
                    per_slider.append((control, lat, none, msgs))
                rows.append((name, latencies, firsts, unchanged, per_slider, messages, touched,
                             time.perf_counter() - started))
                print(f"  {name}: {len(per_slider)} sliders done in {rows[-1][-1]:.0f} s", file=sys.stderr, flush=True)
        finally:
            browser.close()
    print(f"load average after:  {' '.join(f'{x:.2f}' for x in os.getloadavg())}\n")
    header = (f"{'instrument':<22}{'sliders':>8}{'moves':>7}{'median ms':>11}{'p95 ms':>9}{'max ms':>9}"
              f"{'1st change':>12}{'no redraw':>11}{'msgs/move':>11}{'widgets':>9}  p95<{TARGET_MS:g}ms")
    print(header)
    print("-" * len(header))
    for name, latencies, firsts, unchanged, per_slider, messages, touched, _seconds in rows:
        comm = (f"{statistics.mean(messages):>11.1f}{statistics.mean(touched):>9.1f}" if messages
                else f"{'-':>11}{'-':>9}")
        if latencies:
            ok = "yes" if p95(latencies) < TARGET_MS else "NO"
            print(f"{name:<22}{len(per_slider):>8}{len(latencies):>7}{statistics.median(latencies):>11.1f}"
                  f"{p95(latencies):>9.1f}{max(latencies):>9.1f}{statistics.median(firsts):>12.1f}{unchanged:>11}"
                  f"{comm}  {ok}")
        else:
            print(f"{name:<22}{len(per_slider):>8}{0:>7}{'-':>11}{'-':>9}{'-':>9}{'-':>12}{unchanged:>11}{comm}"
                  "  no chart change")
        if args.per_slider:
            for control, lat, none, msgs in per_slider:
                stats = f"{statistics.median(lat):>11.1f}{p95(lat):>9.1f}{max(lat):>9.1f}" if lat else f"{'-':>29}"
                mean_msgs = f"{statistics.mean(msgs):>11.1f}" if msgs else f"{'-':>11}"
                print(f"  {control:<28}{len(lat):>7}{stats}{'':>12}{none:>11}{mean_msgs}")
    return rows


if __name__ == "__main__":
    main()
