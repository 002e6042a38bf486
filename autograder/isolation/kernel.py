"""Execute one submission in a sandboxed kernel that the grader drives.

Only the student's kernel runs in the sandbox (:mod:`autograder.isolation.sandbox`:
bubblewrap namespaces and rlimits). nbclient runs here, in the grader's worker
thread, and talks to the kernel over ZeroMQ IPC sockets in a directory that is
bound into the sandbox at the same path (the sandbox has no network, so TCP
cannot reach it). This costs one Python process per submission, the kernel,
where running nbclient inside the sandbox cost two. When the grader runs as
root, that kernel is not started but forked from a pre-warmed interpreter
(:mod:`autograder.isolation.warm`) that builds the same sandbox itself before any
student code runs; otherwise bwrap starts it.

Everything the kernel sends is hostile, so:

* every ZeroMQ message is capped (``MAX_MESSAGE_BYTES``): a larger one drops
  the connection instead of filling this process's memory;
* outputs count against a byte budget (:class:`BudgetedClient`); widget state
  is not kept;
* a watchdog kills the kernel's whole process tree at the per-submission
  deadline, which also ends a kernel that floods its output channel forever
  (nbclient then reports a dead kernel within a second);
* the per-cell limit interrupts the kernel with a control message (the
  sandbox's own session hides the kernel from signals sent to the launcher).

The harvest cells (:func:`harvest_source`) are appended to the notebook and run
in the same kernel after the student's cells; only their marked stdout line is
read back, and it is judged elsewhere as untrusted JSON.
"""

from __future__ import annotations

import asyncio
import atexit
import copy
import json
import os
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import List, Optional

import zmq
import zmq.asyncio
from nbclient import NotebookClient
from nbformat import NotebookNode
from nbformat.v4 import new_code_cell, new_output

from .. import compat
from . import sandbox, warm

#: prefix of the line a harvest cell prints; read from that cell's stdout only
HARVEST_MARK = "AUTOGRADER-HARVEST:"
#: the largest single ZeroMQ message accepted from a kernel; a larger one drops the connection
MAX_MESSAGE_BYTES = 8 * 2**20
#: messages a socket queues before the kernel's side drops more (bounds memory with the cap above)
RECEIVE_QUEUE = 256
#: the line the kernel's output cap prints where it cut
CUT_NOTE = "[autograder: output beyond this point was dropped]"
#: the most bytes a harvest cell may print
MAX_HARVEST_BYTES = 4 * 2**20


def harvest_source(grade_id: str, seed: int) -> str:
    """Code of the cell that harvests ``grade_id`` in the student's namespace.

    Names are looked up through ``__import__`` so a student variable called
    ``json`` or ``print`` does not break an honest submission; the line is
    written past the output cap (:func:`output_cap_source`).
    """
    return (
        "(lambda _out: getattr(_out, '_autograder_raw_write', _out.write))(__import__('sys').stdout)("
        f"{HARVEST_MARK!r} + __import__('course.notebook_api', fromlist=['harvest_json'])"
        f".harvest_json({grade_id!r}, globals(), {int(seed)}) + '\\n')"
    )


def output_cap_source(chars: int) -> str:
    """Kernel start-up code that caps what stdout and stderr send, ``chars`` each.

    ipykernel sends everything printed within 0.2 s as one message, so one huge
    ``print`` would exceed ``MAX_MESSAGE_BYTES`` and cut the connection; capped
    in the kernel, an honest notebook that prints too much only loses the excess.
    The cap protects the student, not the grader: code that removes it only
    loses its own output.
    """
    return (
        "def _autograder_cap(limit):\n"
        "    import sys\n"
        "    for stream in (sys.stdout, sys.stderr):\n"
        "        raw, left = stream.write, [limit]\n"
        "        def write(text, raw=raw, left=left):\n"
        "            if left[0] <= 0:\n"
        "                return len(text)\n"
        "            cut = text[:left[0]]\n"
        "            left[0] -= len(cut)\n"
        "            raw(cut if len(cut) == len(text) else cut + '\\n' + {CUT_NOTE!r} + '\\n')\n"
        "            return len(text)\n"
        "        stream.write, stream._autograder_raw_write = write, raw\n"
        f"_autograder_cap({int(chars)}); del _autograder_cap"
    ).replace("{CUT_NOTE!r}", repr(CUT_NOTE))


class SandboxedKernelManager(compat.HookedKernelManager):
    """A kernel manager whose kernel command runs behind the sandbox's command prefix.

    Connection file and IPC sockets live in ``sockets_dir``, which the sandbox
    binds read-write at the same path, so one connection file serves both sides.
    """

    def __init__(self, *, prefix: List[str], sockets_dir: Path, uid: Optional[int], context,
                 warm_request: Optional[dict] = None, **kwargs):
        super().__init__(kernel_name="python3", transport="ipc", ip=str(sockets_dir / "kernel"),
                         connection_file=str(sockets_dir / "kernel.json"), context=context,
                         client_class="autograder.compat.QuickReadyClient", **kwargs)
        self._sandbox_prefix = list(prefix)
        self._sockets_dir = sockets_dir
        self._uid = uid
        self._warm_request = warm_request  # set: the kernel is forked by the zygote (:mod:`autograder.isolation.warm`)
        self._warm_process: Optional[warm.WarmProcess] = None

    def client(self, **kwargs):
        kwargs.setdefault("context", self.context)  # the context that caps message sizes
        return super().client(**kwargs)

    def adopt_process(self, kernel_cmd: list):
        """The kernel forked by the zygote (:mod:`autograder.isolation.warm`) when warm; None: launch it sandboxed."""
        if self._uid is not None:  # the kernel runs as the worker slot's user: hand it its files
            for path in [self._sockets_dir, *self._sockets_dir.iterdir()]:
                os.chown(path, self._uid, self._uid)
        if self._warm_request is None:
            return None
        zygote = warm.zygote()
        if zygote is None:
            raise RuntimeError("the kernel zygote is not running")
        request = dict(self._warm_request, connection_file=self.connection_file,
                       arguments=kernel_cmd[kernel_cmd.index("-f") + 2:] if "-f" in kernel_cmd else [])
        self._warm_process = zygote.spawn(request)
        return self._warm_process

    def wrap_command(self, kernel_cmd: list) -> list:
        return self._sandbox_prefix + kernel_cmd

    def kill_tree(self) -> None:
        """SIGKILL the launcher's whole process group (its own session; the sandbox dies with it)."""
        if self._warm_process is not None:  # its PID namespace dies with its launcher
            self._warm_process.kill()
        if self.launched_pid:
            try:
                os.killpg(self.launched_pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


class BudgetedClient(NotebookClient):
    """nbclient configured as nbgrader's ``Execute`` preprocessor, with a byte budget on outputs.

    The settings are those of ``nbgrader.preprocessors.Execute`` (0.9.6):
    interrupt a cell on timeout and record ``CellTimeoutError``, keep going after
    errors, raise on an iopub timeout, keep no input history, and record the
    reply's error when the kernel sent no error output. Outputs past the budget
    are dropped and a single note says so.
    """

    def __init__(self, nb, *args, output_budget: int = 2_000_000, budgeted_cells: int = 10**9, **kwargs):
        kwargs.setdefault("interrupt_on_timeout", True)
        kwargs.setdefault("allow_errors", True)
        kwargs.setdefault("raise_on_iopub_timeout", True)
        kwargs.setdefault("store_widget_state", False)
        kwargs.setdefault("shutdown_kernel", "immediate")  # the sandbox is torn down right after
        kwargs.setdefault("extra_arguments", ["--HistoryManager.hist_file=:memory:"])
        kwargs.setdefault("error_on_timeout", {
            "ename": "CellTimeoutError", "evalue": "",
            "traceback": ["\x1b[0;31mCellTimeoutError\x1b[0m: No reply from kernel before timeout"]})
        super().__init__(nb, *args, **kwargs)
        self.output_budget = output_budget
        self.budgeted_cells = budgeted_cells  # cells from here on are harvest cells
        self.output_used = 0
        self.harvest_used = 0
        self.output_truncated = False
        self.started_cell = -1

    def output(self, outs, msg, display_id, cell_index):
        content = msg.get("content", {})
        if msg["msg_type"] == "error":  # errors always count (nbgrader fails the cell on them)
            content["traceback"] = [str(line)[:2000] for line in list(content.get("traceback", []))[-30:]]
            content["evalue"] = str(content.get("evalue", ""))[:2000]
            content["ename"] = str(content.get("ename", ""))[:200]
            return super().output(outs, msg, display_id, cell_index)
        size = len(json.dumps(content, default=str))
        if cell_index >= self.budgeted_cells:  # harvest cells: their own, larger budget
            self.harvest_used += size
            return super().output(outs, msg, display_id, cell_index) if self.harvest_used <= MAX_HARVEST_BYTES else None
        self.output_used += size
        if self.output_used > self.output_budget:
            if not self.output_truncated:
                self.output_truncated = True
                outs.append(new_output("stream", name="stderr",
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
        cell.outputs.append(NotebookNode(
            output_type="error", ename=str(content.get("ename", ""))[:200],
            evalue=str(content.get("evalue", ""))[:2000],
            traceback=[str(t)[:2000] for t in list(content.get("traceback") or [])[-30:]]
            or ["ERROR: An error occurred while showtraceback was disabled"]))


def _write_startup(work: Path, code: str, uid: Optional[int]) -> None:
    """Put ``code`` in IPython's start-up folder of the scratch copy (``IPYTHONDIR`` is ``.ipython``)."""
    profile = work / ".ipython" / "profile_default"
    startup = profile / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    (startup / "00-autograder-output-cap.py").write_text(code + "\n")
    if uid is not None:
        for path in (work / ".ipython", profile, startup, startup / "00-autograder-output-cap.py"):
            os.chown(path, uid, uid)


def _state_of(exc: BaseException) -> str:
    name = type(exc).__name__
    return "kernel_died" if "Dead" in name else "timeout" if "Timeout" in name else "error"


def execute(nb, work: Path, *, grade_ids: List[str], seed: int, limits: sandbox.Limits,
            slot: int, use_bwrap: bool, student: Optional[str] = None) -> dict:
    """Run ``nb`` (a sanitized copy is made) with ``work`` as the kernel's only writable folder.

    ``student`` is the graded student's id, given to the kernel (``COURSE_STUDENT``) so that its
    prompts and nbgrader test cells use that student's numbers.

    Returns ``{"executed": notebook without the harvest cells (``None`` when killed),
    "harvested": {grade_id: text}, "status": {...}}``. ``status["state"]`` is ``ok``, ``timeout``,
    ``kernel_died`` or ``error``; a kill at the per-submission deadline adds ``killed``.
    """
    nb = copy.deepcopy(nb)
    original_count = len(nb.cells)
    for grade_id in grade_ids:
        nb.cells.append(new_code_cell(harvest_source(grade_id, seed)))
    sockets = Path(str(work) + "-sockets")  # beside the scratch copy, not inside it
    sockets.mkdir(mode=0o700)
    uid = sandbox.slot_uid(slot) if (use_bwrap and os.geteuid() == 0) else None
    inside = sandbox.SCRATCH if use_bwrap else str(work)
    prefix = sandbox.command(str(work), [], limits, slot, use_bwrap, extra_binds=[str(sockets)], student=student)
    status = {"state": "ok", "cell": None, "detail": "", "output_truncated": False}
    context = _bounded_context()
    warm_request = None
    if uid is not None and warm.zygote() is not None:
        root = Path(str(work) + "-root")  # the mount point of the sandbox's own root file system
        root.mkdir(mode=0o700)
        # the same sandbox bwrap would build (one policy: autograder/isolation/policy.py)
        warm_request = warm.request(sandbox.policy(str(work), uid, limits, [str(sockets)], student=student),
                                    str(root))
    km = SandboxedKernelManager(prefix=prefix, sockets_dir=sockets, uid=uid, context=context,
                                warm_request=warm_request)
    # half the budget per stream: JSON escaping can grow text up to 6x and still fit one message
    _write_startup(work, output_cap_source(min(limits.output_bytes // 2, MAX_MESSAGE_BYTES // 12)), uid)
    client = BudgetedClient(nb, km=km, timeout=limits.cell_timeout, output_budget=limits.output_bytes,
                            budgeted_cells=original_count, kernel_name="python3",
                            resources={"metadata": {"path": inside}})
    killed = threading.Event()

    def deadline() -> None:
        killed.set()
        km.kill_tree()

    watchdog = threading.Timer(limits.submission_timeout, deadline)
    watchdog.daemon = True
    started = time.monotonic()
    # bwrap clears the environment and sets the sandbox's own; prlimit alone passes this one on
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin"} if use_bwrap else sandbox.sandbox_env(str(work), student)
    try:
        watchdog.start()
        # the kernel's own stdout/stderr are not the notebook's outputs, and a hostile kernel could
        # write without end to them: they go nowhere
        _run_to_end(_run(client, env=env, cwd=str(work), stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    except BaseException as exc:  # DeadKernelError, CellTimeoutError, kernel start failure ...
        if isinstance(exc, KeyboardInterrupt):
            raise
        status.update(state=_state_of(exc), detail=type(exc).__name__, cell=client.started_cell)
        if client.started_cell >= original_count:
            status["state_during_harvest"] = True
    finally:
        watchdog.cancel()
        # nbclient leaves its exit hook registered when the kernel fails to start; it would keep
        # this client (and the notebook) alive for the whole class and run again at exit
        atexit.unregister(client._cleanup_kernel)
        km.kill_tree()
        if km._warm_process is not None:
            km._warm_process.close()
        context.destroy(linger=0)
        shutil.rmtree(sockets, ignore_errors=True)
        if warm_request is not None:
            shutil.rmtree(warm_request["root"], ignore_errors=True)
    if killed.is_set():
        status = {"state": "timeout", "killed": True}
    status["seconds"] = round(time.monotonic() - started, 3)
    status["output_truncated"] = client.output_truncated
    harvested = _harvested(grade_ids, nb.cells[original_count:])
    _note_cut_and_timed_out(nb.cells[:original_count], status)
    nb.cells = nb.cells[:original_count]
    return {"executed": None if status.get("killed") else nb, "harvested": harvested, "status": status}


def _bounded_context() -> "zmq.asyncio.Context":
    """The grader's ZeroMQ context: messages and queues bounded, nothing kept at close."""
    context = zmq.asyncio.Context()
    context.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE_BYTES)
    context.setsockopt(zmq.RCVHWM, RECEIVE_QUEUE)
    context.setsockopt(zmq.LINGER, 0)
    # the kernel binds its sockets a moment after the grader connects: retry every 10 ms, not 100
    context.setsockopt(zmq.RECONNECT_IVL, 10)
    return context


def _harvested(grade_ids: List[str], harvest_cells) -> dict:
    """``{grade_id: text}`` from the harvest cells' stdout: exactly one marked line each, or nothing."""
    harvested = {}
    for grade_id, cell in zip(grade_ids, harvest_cells):
        lines = [line for out in cell.get("outputs", [])
                 if out.get("output_type") == "stream" and out.get("name") == "stdout"
                 for line in str(out.get("text", "")).splitlines() if line.startswith(HARVEST_MARK)]
        if len(lines) == 1:  # a second marked line means the kernel's output was tampered with
            harvested[grade_id] = lines[0][len(HARVEST_MARK):]
    return harvested


def _note_cut_and_timed_out(cells, status: dict) -> None:
    """Mark ``status`` where the student's cells had output cut or hit the cell time limit."""
    for index, cell in enumerate(cells):
        if cell.cell_type == "code" and any(CUT_NOTE in str(o.get("text", "")) for o in cell.get("outputs", [])):
            status["output_truncated"] = True
        if cell.cell_type == "code" and any(
                o.get("output_type") == "error" and o.get("ename") == "CellTimeoutError"
                for o in cell.get("outputs", [])):
            status.setdefault("timed_out_cells", []).append(index)


def _run_to_end(coroutine) -> None:
    """Run ``coroutine`` on a fresh event loop, in a helper thread if this one already has a loop
    (a grader called from a notebook or a JupyterLab extension)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(coroutine)
        return
    result: list = []

    def target() -> None:
        try:
            asyncio.run(coroutine)
        except BaseException as exc:  # handed back to the caller's thread
            result.append(exc)

    thread = threading.Thread(target=target, name="autograder-kernel", daemon=True)
    thread.start()
    thread.join()
    if result:
        raise result[0]


async def _run(client: BudgetedClient, **start_kwargs) -> None:
    # ipykernel honours an interrupt request on the control channel; a signal to the launcher
    # (bwrap) would not reach the kernel inside the sandbox's own session
    client.km.kernel_spec.interrupt_mode = "message"
    # nbclient cleans up only kernels it made itself; this one it must shut down and disconnect too
    await client.async_execute(cleanup_kc=True, **start_kwargs)
