"""Control change -> updated mark data, in the kernel, for every instrument.

    .venv/bin/python benchmarks/bench_instruments.py [--repeats 200]

For each Instrument subclass in ``course.instruments`` (found automatically,
so new instruments are benchmarked without editing this file) it builds the
instrument, then alternates one control between two values and times the
assignment ``control.value = x``: that call runs the observer, the core call,
the mark assignments and the serialization of every changed widget state
(widgets here use a counting comm that swallows messages, so only the browser
round trip is left out; the browser test measures that). Prints median and
95th percentile in milliseconds against the 10 ms target, with messages and
bytes sent per update. No assertions: figures are for the report.

An instrument picks the control that is moved with a class attribute
``benchmark_control = "name"``; otherwise the first numeric slider is used.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import pkgutil
import statistics
import sys
import time
from pathlib import Path

import comm

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TARGET_MS = 10.0


class CountingComm(comm.DummyComm):
    """Swallows messages like the default comm, counting them and their bytes."""

    messages = 0
    bytes = 0

    def publish_msg(self, msg_type, data=None, metadata=None, buffers=None, **keys):
        CountingComm.messages += 1
        CountingComm.bytes += len(json.dumps(data, default=str)) + sum(memoryview(b).nbytes for b in buffers or ())


comm.create_comm = CountingComm  # before any widget exists


def instrument_classes():
    import course.instruments as package
    from course.instruments.base import Instrument

    found = {}
    for info in pkgutil.iter_modules(package.__path__):
        try:
            module = importlib.import_module(f"{package.__name__}.{info.name}")
        except Exception as exc:  # a module mid-change must not stop the others
            print(f"skipping module {info.name}: {type(exc).__name__}: {exc}", file=sys.stderr)
            continue
        for _name, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, Instrument) and cls is not Instrument and cls.__module__ == module.__name__:
                found[cls.__qualname__] = cls
    return found


def pick_control(inst):
    name = getattr(inst, "benchmark_control", None)
    if name is None:
        for candidate, control in inst.controls.items():
            if hasattr(control, "min") and hasattr(control, "max") and isinstance(control.value, (int, float)):
                name = candidate
                break
    control = inst.controls[name]
    low, high = control.min, control.max
    a = control.value
    b = a + (high - low) / 7 if a + (high - low) / 7 <= high else a - (high - low) / 7
    if isinstance(a, int):
        b = int(round(b)) if int(round(b)) != a else (a + 1 if a < high else a - 1)
    return name, control, a, b


def bench(cls, repeats: int):
    build_start = time.perf_counter()
    inst = cls()
    build_ms = 1e3 * (time.perf_counter() - build_start)
    name, control, a, b = pick_control(inst)
    for value in (b, a, b, a):  # warm-up (caches, first numpy calls)
        control.value = value
    times = []
    CountingComm.messages = CountingComm.bytes = 0
    for i in range(repeats):
        value = b if i % 2 == 0 else a
        start = time.perf_counter()
        control.value = value
        times.append(1e3 * (time.perf_counter() - start))
    failures = inst.failures
    return {
        "instrument": cls.__qualname__,
        "control": name,
        "build_ms": build_ms,
        "median_ms": statistics.median(times),
        "p95_ms": sorted(times)[int(0.95 * (len(times) - 1))],
        "messages": CountingComm.messages / repeats,
        "kbytes": CountingComm.bytes / repeats / 1e3,
        "failures": ",".join(failures) or "-",
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args(argv)
    rows = [bench(cls, args.repeats) for _name, cls in sorted(instrument_classes().items())]
    header = f"{'instrument':<26}{'control':<16}{'build ms':>9}{'median ms':>11}{'p95 ms':>9}{'msgs':>6}{'kB/upd':>8}  ok<{TARGET_MS:g}ms  state"
    print(header)
    print("-" * len(header))
    for r in rows:
        ok = "yes" if r["median_ms"] < TARGET_MS else "NO"
        print(f"{r['instrument']:<26}{r['control']:<16}{r['build_ms']:>9.1f}{r['median_ms']:>11.2f}{r['p95_ms']:>9.2f}"
              f"{r['messages']:>6.0f}{r['kbytes']:>8.1f}  {ok:<9}  {r['failures']}")
    return rows


if __name__ == "__main__":
    main()
