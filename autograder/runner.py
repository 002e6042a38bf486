"""Runs inside the sandbox: execute one notebook, then harvest the registered parts.

Everything here shares the sandbox with the student's kernel, so nothing it
writes is trusted: the parent reads back only cell outputs (for nbgrader's own
result and the feedback) and the harvested JSON (plain values that a trusted
process judges). Invoked as::

    python -m autograder.runner job.json

``job.json`` (written by the parent) names the notebook, the output files,
the grade ids to harvest, the probe seed, the per-cell time limit and the
output budget.
"""

from __future__ import annotations

import json
import sys
import time

# jsonschema imports rfc3987_syntax, which builds a grammar at import (about 1 s, per
# submission here); notebook validation never checks IRIs, so this process skips it.
sys.modules.setdefault("rfc3987_syntax", None)

import nbformat  # noqa: E402
from nbclient import NotebookClient  # noqa: E402
from nbformat import NotebookNode  # noqa: E402

#: prefix of the line a harvest cell prints; the parent reads it from that cell only
HARVEST_MARK = "AUTOGRADER-HARVEST:"


def harvest_source(grade_id: str, seed: int) -> str:
    """Code of the cell that harvests ``grade_id`` in the student's namespace.

    Names are looked up through ``__import__`` so a student variable called
    ``json`` or ``print`` does not break an honest submission.
    """
    return (
        "__import__('builtins').print("
        f"{HARVEST_MARK!r} + __import__('course.exercises', fromlist=['harvest_json'])"
        f".harvest_json({grade_id!r}, globals(), {int(seed)}))"
    )


class BudgetedExecute(NotebookClient):
    """nbclient configured as nbgrader's ``Execute`` preprocessor, with a byte budget on outputs.

    The settings are those of ``nbgrader.preprocessors.Execute`` (0.9.6):
    interrupt a cell on timeout and record ``CellTimeoutError``, keep going after
    errors, raise on an iopub timeout, keep no input history, and record the
    reply's error when the kernel sent no error output. nbclient is used
    directly because importing nbgrader and nbconvert costs this per-submission
    process about a second.

    A cell printing gigabytes would otherwise fill this process's memory (and
    the file the parent reads). Outputs past the budget are dropped and a
    single note says so.
    """

    def __init__(self, nb, *args, output_budget: int = 2_000_000, **kwargs):
        kwargs.setdefault("interrupt_on_timeout", True)
        # the sandbox is torn down right after; waiting for a graceful kernel exit only costs time
        kwargs.setdefault("shutdown_kernel", "immediate")
        kwargs.setdefault("allow_errors", True)
        kwargs.setdefault("raise_on_iopub_timeout", True)
        kwargs.setdefault("extra_arguments", ["--HistoryManager.hist_file=:memory:"])
        kwargs.setdefault("error_on_timeout", {
            "ename": "CellTimeoutError", "evalue": "",
            "traceback": ["\x1b[0;31mCellTimeoutError\x1b[0m: No reply from kernel before timeout"]})
        super().__init__(nb, *args, **kwargs)
        self.output_budget = output_budget
        self.output_used = 0
        self.output_truncated = False
        self.started_cell = -1
        self.budgeted_cells = 10**9  # set to the student's cell count before execution

    def output(self, outs, msg, display_id, cell_index):
        if cell_index >= self.budgeted_cells:  # harvest cells: their own small output
            return super().output(outs, msg, display_id, cell_index)
        if msg["msg_type"] == "error":  # errors always count (nbgrader fails the cell on them)
            content = msg["content"]
            content["traceback"] = [str(line)[:2000] for line in content.get("traceback", [])[-30:]]
            content["evalue"] = str(content.get("evalue", ""))[:2000]
            return super().output(outs, msg, display_id, cell_index)
        size = len(json.dumps(msg.get("content", {}), default=str))
        self.output_used += size
        if self.output_used > self.output_budget:
            if not self.output_truncated:
                self.output_truncated = True
                outs.append(nbformat.v4.new_output(
                    "stream", name="stderr",
                    text=f"[autograder: output beyond {self.output_budget} bytes was dropped]\n"))
            return None
        return super().output(outs, msg, display_id, cell_index)

    async def async_execute_cell(self, cell, cell_index, *args, **kwargs):
        self.started_cell = cell_index
        return await super().async_execute_cell(cell, cell_index, *args, **kwargs)

    def on_cell_executed(self, **kwargs):
        # as nbgrader's Execute: an error reply without an error output (a timeout) is written out
        cell, reply = kwargs["cell"], kwargs["execute_reply"]
        content = reply.get("content", {}) if isinstance(reply, dict) else {}
        if content.get("status") != "error":
            return
        if any(o.get("output_type") == "error" and o.get("ename") == content.get("ename")
               for o in cell.outputs):
            return
        cell.outputs.append(NotebookNode(output_type="error", ename=content.get("ename", ""),
                                         evalue=content.get("evalue", ""),
                                         traceback=content.get("traceback") or
                                         ["ERROR: An error occurred while showtraceback was disabled"]))


def run(job: dict) -> dict:
    nb = nbformat.read(job["notebook"], as_version=4)
    original_count = len(nb.cells)
    for grade_id in job["grade_ids"]:
        nb.cells.append(nbformat.v4.new_code_cell(harvest_source(grade_id, job["seed"])))
    executor = BudgetedExecute(nb, timeout=job["cell_timeout"], output_budget=job["output_budget"],
                               kernel_name="python3", resources={"metadata": {"path": job["cwd"]}})
    executor.budgeted_cells = original_count
    status = {"state": "ok", "cell": None, "detail": "", "output_truncated": False}
    started = time.monotonic()
    try:
        executor.execute()
    except Exception as exc:  # DeadKernelError, CellTimeoutError, kernel start failure ...
        name = type(exc).__name__
        state = "kernel_died" if "Dead" in name else "timeout" if "Timeout" in name else "error"
        status.update(state=state, detail=name, cell=executor.started_cell)
        if executor.started_cell >= original_count:
            status["state_during_harvest"] = True
    status["seconds"] = round(time.monotonic() - started, 3)
    status["output_truncated"] = executor.output_truncated
    harvested = {}
    for grade_id, cell in zip(job["grade_ids"], nb.cells[original_count:]):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream" and out.get("name") == "stdout":
                for line in out.get("text", "").splitlines():
                    if line.startswith(HARVEST_MARK):
                        harvested[grade_id] = line[len(HARVEST_MARK):]
    for index, cell in enumerate(nb.cells[:original_count]):
        if cell.cell_type == "code" and any(
                o.get("output_type") == "error" and o.get("ename") == "CellTimeoutError"
                for o in cell.get("outputs", [])):
            status.setdefault("timed_out_cells", []).append(index)
    nb.cells = nb.cells[:original_count]
    nbformat.write(nb, job["executed"])
    with open(job["harvest"], "w") as fh:
        json.dump({"harvested": harvested, "status": status}, fh)
    return status


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    with open(argv[0]) as fh:
        job = json.load(fh)
    run(job)
    return 0


if __name__ == "__main__":
    sys.exit(main())
