#!/usr/bin/env python3
"""Lab 08 on this machine: Run All of its release notebook, and the alpha-beta it measures.

Prints, with the load average and core count:

1. Run All of ``release/lab08_ring_for_real`` headless (nbclient, one fresh kernel each), three ways:
   nothing locked (what a student's first Run All does), all three predictions locked with an empty
   ledger (every instrument measures), and locked again with the ledger the second run wrote (a
   restart: nothing is measured again). Baseline in the same run: Run All of Lab 06's release, locked
   (no processes); the ratios say what real processes cost. Target: the locked, measuring run <= 120 s
   on a 2-core machine.
2. The bench itself on 2 ranks: ping-pong alpha and 1/beta with their errors and the fit's verdict; the
   race's crossover of recursive doubling and ring, measured and predicted from the fit, on 2 ranks and
   on 3 (more ranks than this machine's cores where it has 2: flagged, and printed anyway).

    .venv/bin/python benchmarks/bench_lab08.py            # everything
    .venv/bin/python benchmarks/bench_lab08.py --no-run-all
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOCKS = {"lab08_ring_for_real": {"lab08/act1": "B", "lab08/act2": "C", "lab08/act3": "B"},
         "lab06_bandwidth_invariant": {"lab06/act1": "C", "lab06/act2": "C"}}


def run_all(name: str, locked: bool, ledger: Path) -> float:
    import nbformat
    from nbclient import NotebookClient

    work = Path(tempfile.mkdtemp(prefix=f"{name}-"))
    try:
        shutil.copy(ROOT / "release" / name / f"{name}.ipynb", work)
        if locked:
            (work / "predictions.json").write_text(json.dumps(
                {k: {"value": v, "locked": True} for k, v in LOCKS[name].items()}))
        os.environ["COURSE_LEDGER"] = str(ledger)
        nb = nbformat.read(str(work / f"{name}.ipynb"), 4)
        start = time.perf_counter()
        NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(work)}}).execute()
        return time.perf_counter() - start
    finally:
        shutil.rmtree(work, ignore_errors=True)


def load() -> str:
    return f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"


def bench_numbers() -> None:
    from course.instruments import AllreduceRace, AlphaBetaBench

    bench = AlphaBetaBench(repeats=10)
    bench.measure()
    r = bench.result
    print(f"ping-pong, 2 ranks ({load()} before): alpha = {r['latency'] * 1e6:.2f} +- {r['latency_error'] * 1e6:.2f} us, "
          f"1/beta = {r['bandwidth'] / 1e9:.2f} +- {r['bandwidth_error'] / 1e9:.2f} GB/s, "
          f"trusted: {r['trusted']} {r['reasons']}; failures shown: {bench.failures}")
    for ranks in (2, 3):
        race = AllreduceRace(model=bench, algorithms=("ring", "recursive_doubling"), ranks=ranks, repeats=5)
        race.measure()
        x = race.result
        print(f"race, {ranks} ranks ({load()}): crossover recursive doubling -> ring measured "
              f"{x['crossover_measured']:.4g} B, predicted {x['crossover_model']:.4g} B "
              f"(core.crossover_message_bytes with the fit); failures shown: {race.failures}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-run-all", action="store_true")
    parser.add_argument("--no-bench", action="store_true")
    args = parser.parse_args()
    if not args.no_run_all:
        with tempfile.TemporaryDirectory() as tmp:
            ledger = Path(tmp) / "ledger.json"
            base = run_all("lab06_bandwidth_invariant", True, Path(tmp) / "lab06-ledger.json")
            print(f"Lab 06 Run All, locked (baseline): {base:.1f} s ({load()})")
            for label, locked in (("nothing locked", False), ("locked, measuring", True),
                                  ("locked, restored from the ledger", True)):
                seconds = run_all("lab08_ring_for_real", locked, ledger)
                print(f"Lab 08 Run All, {label}: {seconds:.1f} s = {seconds / base:.1f}x Lab 06 ({load()})")
    if not args.no_bench:
        bench_numbers()
    sys.stdout.flush()


if __name__ == "__main__":
    main()
