"""Run a function on real processes (MPI ranks) from a notebook, with one call.

This is the engine of Lab 08 and of grading distributed code. It is not physics: ``course.core``
never imports it; labs, instruments' drivers and the grader use it.

**Run a function on p ranks.**

>>> from course.launch import run
>>> def hello(comm, greeting):
...     return f"{greeting} from {comm.Get_rank()} of {comm.Get_size()}"
>>> result = run(hello, "hi", ranks=2, timeout=30)          # doctest: +SKIP
>>> result.ok, result.values                                  # doctest: +SKIP
(True, ['hi from 0 of 2', 'hi from 1 of 2'])

``run(target, *args, ranks=2, timeout=60.0, backend="mpi", progress=False, env=None, cwd=None,
mpiexec=None, python=None, kwargs=None) -> RunResult``

- ``target``: a function (called ``target(comm, *args, **kwargs)`` on every rank, ``comm`` being
  ``mpi4py.MPI.COMM_WORLD``), ``"module:function"``, or a path to a ``.py`` script (run as
  ``__main__`` with ``comm`` and ``report`` already defined; its global ``result`` is its value). A
  function defined in a notebook is sent as its source: it must import what it uses inside its body
  (``np`` is provided).
- ``args``/``kwargs`` are pickled to the ranks; each rank's return value comes back through an
  allow-list unpickler (NumPy arrays and scalars, numbers, str/bytes, builtin containers).
- ``backend="gloo"`` or ``"nccl"`` (only where PyTorch is installed: :func:`available_backends`):
  ``mpiexec`` still starts the processes, and ``target`` receives ``torch.distributed``, already
  initialised (``init_process_group``), instead of ``comm``.
- ``progress=True`` (or a description string): a tqdm bar that moves whenever a rank calls
  ``report(done, total)`` (``from course.launch import report``; in a shipped function or a script,
  ``report`` is already defined); or a function ``show(done, total)``, called instead (Lab 08's
  instruments draw their own bar with it).

What comes back: :class:`RunResult` with ``ok``, ``values`` (by rank), ``errors`` ``{rank: "Type:
message"}``, ``tracebacks``, ``missing`` (ranks with neither value nor error), ``timed_out``,
``interrupted``, ``reason`` (one sentence: which ranks raised or never finished, and why; empty
when ``ok``), ``output`` (tail of each rank's stdout+stderr), ``launcher_output``, ``returncode``,
``seconds``, ``cores``, ``load``, ``oversubscribed``. ``run`` never raises for what the ranks do:
errors and timeouts are in the result; ``result.raise_for_status()`` turns them into
``LaunchError``. It raises ``ValueError`` for bad arguments, ``FileNotFoundError`` when no
``mpiexec`` exists, and re-raises ``KeyboardInterrupt`` after stopping every rank.

**Guarantees.**

- *Timeout*: at ``timeout`` seconds every rank is ended; ``reason`` names the ranks that had not
  finished. One rank that raises ends the launch within half a second (the others would wait in a
  collective forever); so does one that dies without a word (``os._exit``, a crash, a kill: it is in
  ``ended``, named with its exit status or crash where these can be read).
- *Interrupt*: the kernel's interrupt (KeyboardInterrupt) ends every rank, then propagates.
- *Never outlive the kernel*: ranks run in a new session under MPICH's ``mpiexec.gforker`` (every
  rank a direct child in one process group); each rank dies with the process manager
  (``PR_SET_PDEATHSIG``) and watches the kernel (pid and start time) in a watchdog thread, so a
  kernel restart or a SIGKILL of the kernel ends its ranks within ``runner.WATCH_PERIOD``;
  ``atexit`` ends live launches; every process carries a random token in its environment, and
  ending a launch also kills any process with that token that left the group
  (``processes_with_token``, which tests use to show none is left).

**The runner's conventions** (for running it elsewhere, e.g. inside a grading sandbox).

``mpiexec -n p python -m course.launch.runner <work>`` (or ``python runner.py <work>`` with the
file copied: it imports only the standard library, mpi4py and NumPy). ``<work>/spec.json``:
``{"target": {"module","qualname"} | {"source","name"} | {"script"}, "backend": "mpi",
"owner_pid": int|null, "owner_start": int|null}``; ``<work>/args.pkl``: ``pickle((args, kwargs))``.
Each rank writes ``rank-<r>.out`` (stdout+stderr), then ``rank-<r>.result`` (pickle) or
``rank-<r>.error`` (JSON ``type``, ``message``, ``traceback``); ``progress`` gets ``done total``
lines. Environment: ``COURSE_LAUNCH_WORK`` (the work directory), ``COURSE_LAUNCH_TOKEN``.
"""

from __future__ import annotations

from .backends import available_backends, missing_backends
from .processes import (LaunchError, RunResult, find_mpiexec, load_average, load_result, processes_with_token,
                        run, usable_cores)
from .runner import report

__all__ = [
    "run",
    "RunResult",
    "LaunchError",
    "report",
    "available_backends",
    "missing_backends",
    "find_mpiexec",
    "usable_cores",
    "load_average",
    "load_result",
    "processes_with_token",
]
