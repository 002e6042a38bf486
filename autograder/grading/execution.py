"""Running a submission: its notebook in the sandboxed kernel, its clean room and its ranks, and the
notes on what they stopped (a part of :class:`~autograder.grading.grader.Grader`).
"""

from __future__ import annotations

import copy
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Dict, List, Optional

import nbformat

from ..judging import sandboxed_cleanroom as cleanroom
from ..judging import ranks
from ..isolation import kernel, sandbox
from .submissions import Submission

from .common import ENDED_RUN, MAX_KERNEL_RERUNS


class Execution:
    """Running a submission: a part of the grader (its methods use its settings)."""

    def _scratch_copy(self, sub: Submission, scratch: Path, name: str, slot: int) -> Path:
        """A folder with the submission's files, then the instructor's (as nbgrader), for one sandbox."""
        work = scratch / name
        work.mkdir()
        source_dir = self.course.folder("source", ".", self.assignment_name)
        for folder in (sub.folder, source_dir):
            if folder and folder.is_dir():
                for path in folder.rglob("*"):
                    rel = path.relative_to(folder)
                    if (path.is_file() and not path.is_symlink() and path.suffix != ".ipynb"
                            and ".ipynb_checkpoints" not in rel.parts and path.stat().st_size < 20 * 2**20):
                        (work / rel).parent.mkdir(parents=True, exist_ok=True)
                        shutil.copyfile(path, work / rel)
        sandbox.prepare_scratch(work, slot, self.use_bwrap)
        return work

    def _run_sandbox(self, nb, sub: Submission, slot: int, seed: int, reruns: int = MAX_KERNEL_RERUNS) -> dict:
        """Execute the notebook (and harvest lab parts) in the kernel's sandbox, and evaluate function
        parts and workbook answers in a clean room (:mod:`autograder.judging.sandboxed_cleanroom`); return outputs,
        harvests and a status."""
        # the kernel's IPC socket paths live under here, and Unix socket paths end at 107 bytes
        base = tempfile.gettempdir() if len(tempfile.gettempdir()) <= 48 else "/tmp"
        scratch = Path(tempfile.mkdtemp(prefix="autograder-", dir=base))
        try:
            split = cleanroom.split_parts(self.registered)
            room: dict = {}
            if split["functions"] or split["values"]:
                # the clean room starts from its own fresh copy, so nothing the kernel writes can reach
                # it, and runs beside the kernel (a separate process: it overlaps the kernel's start-up)
                # (without bwrap both would run as one user on one disk: then one after the other)
                room_work = self._scratch_copy(sub, scratch, "room", slot)
                room_thread = threading.Thread(target=lambda: room.update(cleanroom.evaluate(
                    nb, room_work, split=split, seed=seed, limits=self.limits, slot=slot,
                    use_bwrap=self.use_bwrap, timeout=float(self.limits.submission_timeout))),
                    name="autograder-cleanroom", daemon=True)
                room_thread.start()
                if not self.use_bwrap:
                    room_thread.join()
            run = kernel.execute(nb, self._scratch_copy(sub, scratch, "work", slot), grade_ids=split["kernel"],
                                 seed=seed, limits=self.limits, slot=slot, use_bwrap=self.use_bwrap,
                                 student=sub.student)
            stopped: List[int] = []
            how: Dict[int, str] = {}
            # parts read from the kernel (a lab's answers and locks) need a kernel that reaches the
            # end: a cell that ignored the interrupt (a bare except in a loop) hung it, or one that
            # ended it (os._exit, a signal, closing its channels), so run the notebook again in a fresh
            # sandbox without that cell, as the clean room does
            while split["kernel"] and len(stopped) < reruns:
                stuck = self._stuck_cell(run, len(nb.cells))
                if stuck is None or stuck in stopped or nb.cells[stuck].cell_type != "code":
                    break
                stopped.append(stuck)
                how[stuck] = "died" if run["status"].get("state") == "kernel_died" else "hung"
                without = copy.deepcopy(nb)
                for index in stopped:
                    without.cells[index].source = ""  # nbclient skips an empty cell
                run = kernel.execute(without, self._scratch_copy(sub, scratch, f"rerun{len(stopped)}", slot),
                                     grade_ids=split["kernel"], seed=seed, limits=self.limits, slot=slot,
                                     use_bwrap=self.use_bwrap, student=sub.student)
            run["stopped_cells"] = sorted(stopped)
            run["stopped_how"] = how
            if split["functions"] or split["values"]:
                room_thread.join()
            run["cleanroom"], run["split"] = (room or None), split
            run["ranks"] = self._run_ranks(nb, sub, scratch, slot, seed, split["ranks"])
            return run
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def _run_ranks(self, nb, sub: Submission, scratch: Path, slot: int, seed: int, grade_ids: List[str]) -> dict:
        """Each collective part's function on real MPI ranks, one sandboxed launch per part from a fresh
        copy (:mod:`autograder.judging.ranks`): ``{grade_id: harvest}``. A launch that deadlocks or
        loses a rank ends at its time limit and costs that part only."""
        from course.notebook_api import REGISTRY

        sources = cleanroom.code_cells(nb)
        out = {}
        # all the launches of one submission share its time: one that hangs leaves less to the next
        deadline = time.monotonic() + float(self.limits.submission_timeout)
        for gid in grade_ids:
            work = self._scratch_copy(sub, scratch, f"ranks-{gid}", slot)
            out[gid] = ranks.evaluate_part(REGISTRY[gid], sources, work, seed=seed, limits=self.limits, slot=slot,
                                           use_bwrap=self.use_bwrap,
                                           timeout=max(ranks.MIN_LAUNCH_SECONDS, deadline - time.monotonic()))
        return out

    @staticmethod
    def _stuck_cell(run: dict, cells: int) -> Optional[int]:
        """Index of the cell that hung the kernel (it ran past the cell limit and ignored the
        interrupt) or ended it (the kernel died while it ran), or ``None`` if the kernel reached the
        end or nothing names such a cell."""
        status = run["status"]
        if status.get("state") == "kernel_died" and not status.get("state_during_harvest"):
            cell = status.get("cell")
            return cell if type(cell) is int and 0 <= cell < cells else None
        if status.get("state") != "timeout":
            return None
        cell = status.get("cell")
        if type(cell) is int and 0 <= cell < cells:  # nbclient gave up on this cell after its interrupt
            return cell
        timed_out = [i for i in status.get("timed_out_cells", []) if 0 <= i < cells]
        return timed_out[-1] if timed_out else None  # killed at the deadline: the last cell that overran

    @staticmethod
    def _mark_cells(nb, state: dict, room: dict) -> None:
        """Under each cell that ended the kernel or a clean-room run, a line saying so, where the student
        reads it (the feedback and ``autograded/``, so feedback made again later says it too)."""
        marks: Dict[int, List[str]] = {}
        cell = state.get("cell")
        if state.get("state") == "kernel_died" and type(cell) is int and 0 <= cell < len(nb.cells):
            marks.setdefault(cell + 1, []).append(
                "the Python kernel stopped while this cell ran (os._exit, a signal such as os.kill, closing the "
                "kernel's connections, a crash, or too much memory); the cells after it have no outputs")
        for number in room.get("ended_by", []):
            marks.setdefault(number, []).append(
                "when your code was run again to grade it, this cell ended the run (it killed or stopped the "
                "processes that run your notebook); it was run again without this cell")
        if room.get("ended_in"):
            marks.setdefault(room["ended_in"], []).append(
                "when your code was run again to grade it, this cell ended the run (it killed or stopped the "
                "processes that run your notebook), and your answers could not be read")
        for number in room.get("stopped_cells", []):
            marks.setdefault(number, []).append(
                "when your code was run again to grade it, this cell ended its own process; the cells after it "
                "ran without it" if number in room.get("exited_cells", []) else
                "when your code was run again to grade it, this cell never finished and was stopped; the cells "
                "after it ran without it")
        for number, texts in marks.items():
            if 1 <= number <= len(nb.cells) and nb.cells[number - 1].cell_type == "code":
                nb.cells[number - 1].outputs = list(nb.cells[number - 1].get("outputs", [])) + [
                    nbformat.v4.new_output("stream", name="stderr", text=f"[autograder: {text}]\n")
                    for text in texts]

    @staticmethod
    def _merge_outputs(nb, executed) -> None:
        """Copy outputs from the executed copy (same cells, outputs from the kernel) into ``nb``.

        Output lists and execution counts come from the student's kernel, so only
        well-formed ones are kept.
        """
        if executed is None:  # killed at the deadline: nothing trustworthy came back
            return
        for cell, done in zip(nb.cells, executed.cells):
            if cell.cell_type == "code":
                outputs = done.get("outputs", [])
                cell.outputs = [o for o in outputs if isinstance(o, dict)] if isinstance(outputs, list) else []
                count = done.get("execution_count")
                cell.execution_count = count if type(count) is int else None

    def _submission_problem(self, state: dict, kernel_parts: bool = True, cells: int = 0) -> Optional[str]:
        """What stopped the notebook's run in its kernel, for the student (``None``: nothing did).

        Without parts read from the kernel (a workbook chapter, whose parts are all judged in the
        clean room) it costs outputs only, and the text says so instead of "score 0"."""
        kind = state.get("state")
        if kind in ("ok", None):
            return None
        lost = ("exercises could not be read and score 0" if kernel_parts else
                "some outputs are missing, but your answers were checked by running your code again")
        if kind == "timeout" and state.get("killed"):
            return (f"your notebook did not finish within {self.limits.submission_timeout} s (look for a "
                    f"cell that never ends, such as an infinite loop); {lost}")
        if kind == "timeout":
            cell = state.get("cell")
            where = f"cell {cell + 1}" if type(cell) is int and cell >= 0 else "a cell"
            return (f"your notebook did not finish: {where} kept running past the {self.limits.cell_timeout} s "
                    f"limit even when interrupted; {lost}")
        if kind == "kernel_died":
            cell = state.get("cell")
            where = (f"cell {cell + 1} of your notebook" if type(cell) is int and 0 <= cell < cells
                     else "your notebook")
            return (f"the Python kernel stopped while running {where} (os._exit, a signal such as "
                    f"os.kill, closing the kernel's connections, a crash, or using too much memory or too "
                    f"many processes); {lost}")
        if state.get("cell") == -1:  # no cell ever started: the kernel did not come up
            return (f"the grader could not start a Python kernel for your notebook "
                    f"({state.get('detail') or kind}); exercises score 0 until your instructor regrades it")
        return f"your notebook could not be run to the end ({state.get('detail') or kind}); {lost}"

    def _kernel_notes(self, nb, run: dict) -> List[str]:
        """What the kernel's run stopped: a note per cell, and the stopped cell's output says so."""
        notes = [f"cell {index + 1} ran longer than {self.limits.cell_timeout} s and was stopped"
                 for index in run["status"].get("timed_out_cells", [])]
        for index in run.get("stopped_cells", []):
            if run.get("stopped_how", {}).get(index) == "died":
                notes.append(f"cell {index + 1} ended the Python kernel (os._exit, a signal such as os.kill, "
                             "closing the kernel's connections, a crash, or too much memory): your notebook was "
                             "run again without it")
                text = "[autograder: this cell ended the kernel; the notebook was run again without it]\n"
            else:
                notes.append(f"cell {index + 1} never finished (it ran past {self.limits.cell_timeout} s and "
                             "ignored the interrupt, which stopped the kernel): it was stopped and your notebook "
                             "was run again without it")
                text = "[autograder: this cell never finished and was stopped; the notebook was run again without it]\n"
            if nb.cells[index].cell_type == "code":
                nb.cells[index].outputs = [nbformat.v4.new_output("stream", name="stderr", text=text)]
        return notes

    def _room_notes(self, room: dict) -> List[str]:
        """What the clean room's run stopped or what ended it, a note each."""
        notes = []
        for number in room.get("stopped_cells", []):
            if number in room.get("exited_cells", []):
                notes.append(f"cell {number} ended its own process when your code was run again to grade it "
                             "(os._exit, a signal such as os.kill, a crash, or too much memory): the cells after it "
                             "ran without it")
            else:
                notes.append(f"cell {number} never finished when your code was run again to grade it (it ran "
                             f"past {self.limits.cell_timeout} s and ignored the interrupt): it was stopped and "
                             "the cells after it ran without it")
        for number in room.get("ended_by", []):
            notes.append(f"cell {number} {ENDED_RUN}: your notebook was run again without it, and your other "
                         "answers were graded")
        if room.get("ended_in"):
            notes.append(f"cell {room['ended_in']} {ENDED_RUN}, and your answers could not be read")
        for gid in room.get("ended_by_calls", []):
            notes.append(f"calling your function for {gid} ended the grading run: it was run again without "
                         "those calls")
        return notes
