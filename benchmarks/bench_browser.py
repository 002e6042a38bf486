"""Keyboard slider move -> chart redrawn, in real JupyterLab and headless Chromium, for every instrument.

    .venv/bin/python benchmarks/bench_browser.py [--moves 50] [--only ScalingExplorer,SyncAudit]

Starts a JupyterLab server of its own (the browser tests' ``start_lab_server``: free
port, random token, temporary root, config and ledger; configured as ``dev.py lab`` and the hub configure a
student's, kernel websockets with ``TCP_NODELAY``, see ``course/lab_server.py``: without it Nagle's algorithm and the
browser's delayed ACK held a third of all moves ~35 ms, which was every instrument's p95), writes a notebook with one cell
per :class:`~course.instruments.Instrument` subclass (found automatically, as
``bench_instruments.py`` finds them), runs it in Debian's ``/usr/bin/chromium`` through
Playwright (never ``playwright install``), then, for every slider of every instrument,
puts the instrument back to its opening values (a reset button under it, one update), focuses
the slider's handle and presses an arrow key ``--moves`` times (right until the slider's
maximum, then left). One move is timed from the ``keydown`` event (a capturing listener on
the document) to the **last** DOM mutation inside the instrument's charts (``.bqplot``,
watched by a ``MutationObserver``). A move is over once the kernel has gone idle after
every widget message the browser sent (its ``status`` messages, read off the websocket),
the page has dispatched every websocket frame received, and neither a message nor a chart
change came for ``--quiet-ms``. That span holds the widget message to the kernel, the
instrument's update, the messages back and every redraw bqplot makes. One JupyterLab
server, one page and one kernel serve all instruments; while one is measured the cells of the
others are hidden (``display: none``; ``--all-visible`` keeps them), so that its figures are those of
a notebook of one instrument, not of ten: JupyterLab restyles and lays out the whole page on every
move (its toolbar reads the layout on each kernel busy/idle). Each slider prints a progress line (to
stderr) as it finishes.

Prints, per instrument, the median and the 95th percentile over all moves of all its
sliders against the 50 ms target, the median time to the *first* chart change (the rest
of a move is the redraws after it), and the moves that redrew nothing (a slider that
moves only a card, or a value the chart does not show); ``--per-slider`` adds one line
per slider. ``last msg`` is the median time from the key to the page's last websocket message of the
move, ``kernel`` the kernel's own busy time on the move (its busy -> idle status dates): what is left
of a move after them is the browser's. ``msgs/move`` counts the widget (``comm_msg``) messages the kernel
sent per move, read off the kernel's websocket (the slider's echo included; ``widgets``: how many distinct
widgets they touched): unlike the times it does not depend on the machine's load. No assertions: figures
are for the report (quote them with ``uptime``).
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

from tests.browser.conftest import (CHROMIUM, CHROMIUM_ARGS, open_notebook_page, run_all_cells,  # noqa: E402 -- after the repository is put on sys.path
                                    start_lab_server)

TARGET_MS = 50.0

# Before the page loads: count the kernel websocket's messages as the page dispatches them (the time of the last one),
# so that a move is settled only once the page has handled every message the kernel sent.
WS_RECORDER = """(() => {
    window.__ws = {count: 0, last: null};
    const Original = window.WebSocket;
    class Recorded extends Original {
        constructor(...args) {
            super(...args);
            if (String(args[0]).includes('/channels')) {
                this.addEventListener('message', () => { window.__ws.count += 1; window.__ws.last = performance.now(); });
            }
        }
    }
    window.WebSocket = Recorded;
})();"""

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

# Show only the instrument being measured (its cell), the others' cells display:none: a student's notebook holds
# one instrument or a few, and every style recalculation and forced layout of a move (JupyterLab's toolbar
# reads the layout on each kernel busy/idle) grows with what the page shows.
ISOLATE = """(sel) => {
    for (const cell of document.querySelectorAll('.jp-Notebook .jp-Cell')) {
        if (!cell.querySelector('.course-instrument')) continue;
        cell.style.display = cell.querySelector(sel) ? '' : 'none';
    }
}"""

ARM = "() => { window.__move = {start: null, first: null, last: null, mutations: 0}; }"

# Where the page is: websocket messages it dispatched, ms since the last one, since the last chart change (null: none).
PAGE_STATE = """() => {
    const now = performance.now(), m = window.__move, ws = window.__ws;
    return {count: ws.count, sinceMessage: ws.last === null ? null : now - ws.last,
            sinceChange: m.last === null ? null : now - m.last, started: m.start !== null};
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
        self.frames = 0  # every frame the kernel's websockets received, widget message or not
        self.pending: set[str] = set()  # msg_ids of the browser's widget messages the kernel has not finished
        self.busy_since: dict[str, str] = {}
        self.kernel_ms = 0.0  # the kernel's busy time on this move's widget messages (its own clock)

    def reset(self):
        self.received, self.sent, self.widgets, self.kernel_ms = 0, 0, set(), 0.0

    @staticmethod
    def _parse(payload):
        """(msg_type, comm_id, msg_id, parent msg_id, execution_state, date) of one frame, or None."""
        try:
            if isinstance(payload, str):
                msg = json.loads(payload)
                header, parent, content = msg["header"], msg.get("parent_header") or {}, msg.get("content", {})
            else:
                (count,) = struct.unpack_from("<Q", payload, 0)
                offsets = struct.unpack_from(f"<{count}Q", payload, 8)
                header = json.loads(payload[offsets[1]:offsets[2]])
                parent = json.loads(payload[offsets[2]:offsets[3]]) if count > 3 else {}
                content = json.loads(payload[offsets[4]:offsets[5]]) if count > 5 else {}
            return (header["msg_type"], content.get("comm_id"), header.get("msg_id"), (parent or {}).get("msg_id"),
                    content.get("execution_state"), header.get("date"))
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
        self.frames += 1
        parsed = self._parse(payload)
        if not parsed:
            return
        if parsed[0] == "comm_msg":
            self.received += 1
            self.widgets.add(parsed[1])
        elif parsed[0] == "status" and parsed[4] == "busy" and parsed[3] in self.pending:
            self.busy_since[parsed[3]] = parsed[5]
        elif parsed[0] == "status" and parsed[4] == "idle" and parsed[3] in self.pending:
            self.pending.discard(parsed[3])
            began = self.busy_since.pop(parsed[3], None)
            if began and parsed[5]:  # the kernel's own clock: busy -> idle around the handling of one message
                from datetime import datetime
                span = datetime.fromisoformat(parsed[5].replace("Z", "+00:00")) - datetime.fromisoformat(
                    began.replace("Z", "+00:00"))
                self.kernel_ms += span.total_seconds() * 1e3

    def _on_sent(self, payload):
        parsed = self._parse(payload)
        if parsed and parsed[0] == "comm_msg":
            self.sent += 1
            self.pending.add(parsed[2])

    @property
    def kernel_done(self) -> bool:
        """The browser sent a widget message and the kernel has answered every one (its status went idle)."""
        return self.sent > 0 and not self.pending


def settle(page, counter: CommCounter, quiet_ms: float, nothing_ms: float, timeout_s: float = 60.0) -> str:
    """Wait until a move is over: 'redrawn' or 'none' (no chart changed).

    Over means: the kernel went idle after every widget message the browser sent (read off the websocket),
    the page has dispatched every frame the websocket received, and neither a message nor a chart change came
    for ``quiet_ms``. A move that sent nothing (a slider at its end) is 'none' after ``nothing_ms``.
    """
    started = time.perf_counter()
    while True:
        state = page.evaluate(PAGE_STATE)
        elapsed = (time.perf_counter() - started) * 1e3
        if counter.kernel_done and state["count"] >= counter.frames:
            quiet = [v for v in (state["sinceMessage"], state["sinceChange"]) if v is not None]
            if min(quiet, default=quiet_ms) >= quiet_ms:
                return "redrawn" if state["sinceChange"] is not None else "none"
        elif counter.sent == 0 and elapsed > nothing_ms:
            return "none"
        if elapsed > timeout_s * 1e3:
            raise TimeoutError(f"a move did not settle in {timeout_s} s (kernel done: {counter.kernel_done}, "
                               f"frames {state['count']}/{counter.frames})")
        page.wait_for_timeout(5)  # Playwright delivers the websocket events while it waits


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
    """One cell per instrument; each widget carries the class ``bench-<Name>`` for the selectors.

    Under each instrument, a button (class ``bench-reset-<Name>``) puts every control back to the value the
    instrument opened with, in one update: each slider's moves start from the instrument's own opening state,
    not from wherever the previous slider left it (an interleaved schedule with m not a multiple of p, say,
    where every later move only redraws a banner).
    """
    cells = [nbformat.v4.new_code_cell(
        "import ipywidgets\n"
        "import course.instruments as instruments\n"
        "def bench_reset_button(inst, name):\n"
        "    opening = inst.values()\n"
        "    def reset(_button):\n"
        "        with inst.batch():\n"
        "            for control, value in opening.items():\n"
        "                inst.controls[control].value = value\n"
        "    button = ipywidgets.Button(description='reset ' + name)\n"
        "    button.add_class('bench-reset-' + name)\n"
        "    button.on_click(reset)\n"
        "    return button")]
    for name, cls in classes.items():
        cells.append(nbformat.v4.new_code_cell(
            f"bench_{name} = instruments.{name}()  # {cls.__module__}\n"
            f"bench_{name}.widget.add_class('bench-{name}')\n"
            f"ipywidgets.VBox([bench_{name}.widget, bench_reset_button(bench_{name}, '{name}')])"))
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nbformat.write(nb, str(path))


def slider_names(page, selector: str) -> list[str]:
    """Names of the controls of one instrument that are sliders (they have a noUiSlider handle)."""
    return page.evaluate("""(sel) => [...document.querySelectorAll(sel + ' [class*="course-control-"]')]
        .filter(el => el.querySelector('.noUi-handle'))
        .map(el => [...el.classList].find(c => c.startsWith('course-control-')).slice('course-control-'.length))""",
                         selector)


def reset_instrument(page, name: str, counter: CommCounter, quiet_ms: float) -> None:
    """Click the instrument's reset button and wait until its update is over."""
    page.evaluate(ARM)
    counter.reset()
    page.locator(f".bench-reset-{name}").first.click()
    settle(page, counter, quiet_ms, nothing_ms=quiet_ms)


def move_slider(page, selector: str, control: str, moves: int, quiet_ms: float, nothing_ms: float,
                counter: CommCounter):
    """``moves`` arrow-key presses on one slider.

    Returns (latencies to the last chart change in ms, latencies to the first one, moves that redrew nothing,
    kernel -> browser widget messages per move, widgets they touched per move, time from the key to the page's
    last websocket message per move, the kernel's busy time per move).
    """
    handle = page.locator(f"{selector} .course-control-{control} .noUi-handle").first
    handle.scroll_into_view_if_needed()
    handle.focus()
    latencies, firsts, unchanged, messages, touched, last_messages, kernel = [], [], 0, [], [], [], []
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
        state = settle(page, counter, quiet_ms, nothing_ms)
        messages.append(counter.received)
        touched.append(len(counter.widgets))
        kernel.append(counter.kernel_ms)
        move = page.evaluate("() => ({...window.__move, lastMessage: window.__ws.last})")
        if move["lastMessage"] is not None and move["start"] is not None:
            last_messages.append(move["lastMessage"] - move["start"])
        if state == "none":
            unchanged += 1
            continue
        latencies.append(move["last"] - move["start"])
        firsts.append(move["first"] - move["start"])
    return latencies, firsts, unchanged, messages, touched, last_messages, kernel


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--moves", type=int, default=50, help="key presses per slider")
    parser.add_argument("--quiet-ms", type=float, default=150.0,
                        help="a move is over once the kernel is idle, the page has handled its last message and "
                             "neither a message nor a chart change came for this long")
    parser.add_argument("--nothing-ms", type=float, default=1500.0,
                        help="a key press that sent no widget message within this long moved nothing")
    parser.add_argument("--only", default="", help="comma-separated instrument class names")
    parser.add_argument("--per-slider", action="store_true", help="print one line per slider too")
    parser.add_argument("--all-visible", action="store_true",
                        help="keep every instrument shown while one is measured (default: only the measured one's "
                             "cell is displayed, as in a notebook of one instrument)")
    args = parser.parse_args(argv)
    if not CHROMIUM.exists():
        sys.exit("/usr/bin/chromium is missing (apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    classes = instrument_classes()
    if args.only:
        wanted = set(args.only.split(","))
        unknown = wanted - set(classes)
        if unknown:
            sys.exit(f"unknown instrument(s) {sorted(unknown)}; known: {sorted(classes)}")
        classes = {name: cls for name, cls in classes.items() if name in wanted}
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    rows = []
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-browser-") as tmp, start_lab_server(Path(tmp)) as server, \
            sync_playwright() as pw:
        write_notebook(server.root / "bench_instruments.ipynb", classes)
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            context.add_init_script(WS_RECORDER)
            counter = CommCounter()
            context.on("page", counter.attach)  # before the notebook's page opens its kernel websocket
            page = open_notebook_page(server, context, "bench_instruments.ipynb")
            run_all_cells(page)
            page.evaluate(INSTALL)
            print(f"  notebook of {len(classes)} instruments open and run in {time.perf_counter() - began:.0f} s",
                  file=sys.stderr, flush=True)
            for name in classes:
                selector = f".bench-{name}"
                if not args.all_visible:
                    page.evaluate(ISOLATE, selector)
                page.locator(f"{selector} .bqplot svg").first.wait_for(timeout=60_000)
                page.evaluate("(sel) => window.__watch(sel)", selector)
                started = time.perf_counter()
                latencies, firsts, unchanged, per_slider, messages, touched, last_messages, kernel = \
                    [], [], 0, [], [], [], [], []
                for control in slider_names(page, selector):
                    reset_instrument(page, name, counter, args.quiet_ms)
                    lat, first, none, msgs, widgets, last_msg, busy = move_slider(
                        page, selector, control, args.moves, args.quiet_ms, args.nothing_ms, counter)
                    latencies += lat
                    firsts += first
                    unchanged += none
                    messages += msgs
                    touched += widgets
                    last_messages += last_msg
                    kernel += busy
                    per_slider.append((control, lat, none, msgs))
                    summary = (f"median {statistics.median(lat):.1f} ms, p95 {p95(lat):.1f} ms" if lat
                               else "no chart change")
                    print(f"  {name}.{control}: {args.moves} moves, {summary}, {none} without redraw "
                          f"({time.perf_counter() - began:.0f} s)", file=sys.stderr, flush=True)
                rows.append((name, latencies, firsts, unchanged, per_slider, messages, touched, last_messages, kernel,
                             time.perf_counter() - started))
        finally:
            browser.close()
    print(f"load average after:  {' '.join(f'{x:.2f}' for x in os.getloadavg())}  "
          f"({time.perf_counter() - began:.0f} s in all)\n")
    header = (f"{'instrument':<22}{'sliders':>8}{'moves':>7}{'median ms':>11}{'p95 ms':>9}{'max ms':>9}"
              f"{'1st change':>12}{'last msg':>10}{'kernel':>8}{'no redraw':>11}{'msgs/move':>11}{'widgets':>9}  p95<{TARGET_MS:g}ms")
    print(header)
    print("-" * len(header))
    for name, latencies, firsts, unchanged, per_slider, messages, touched, last_messages, kernel, _seconds in rows:
        comm = (f"{statistics.mean(messages):>11.1f}{statistics.mean(touched):>9.1f}" if messages
                else f"{'-':>11}{'-':>9}")
        last_msg = f"{statistics.median(last_messages):>10.1f}" if last_messages else f"{'-':>10}"
        last_msg += f"{statistics.median(kernel):>8.1f}" if kernel else f"{'-':>8}"
        if latencies:
            ok = "yes" if p95(latencies) < TARGET_MS else "NO"
            print(f"{name:<22}{len(per_slider):>8}{len(latencies):>7}{statistics.median(latencies):>11.1f}"
                  f"{p95(latencies):>9.1f}{max(latencies):>9.1f}{statistics.median(firsts):>12.1f}{last_msg}"
                  f"{unchanged:>11}{comm}  {ok}")
        else:
            print(f"{name:<22}{len(per_slider):>8}{0:>7}{'-':>11}{'-':>9}{'-':>9}{'-':>12}{last_msg}{unchanged:>11}"
                  f"{comm}  no chart change")
        if args.per_slider:
            for control, lat, none, msgs in per_slider:
                stats = f"{statistics.median(lat):>11.1f}{p95(lat):>9.1f}{max(lat):>9.1f}" if lat else f"{'-':>29}"
                mean_msgs = f"{statistics.mean(msgs):>11.1f}" if msgs else f"{'-':>11}"
                print(f"  {control:<28}{len(lat):>7}{stats}{'':>30}{none:>11}{mean_msgs}")
    return rows


if __name__ == "__main__":
    main()
