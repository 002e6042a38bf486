"""Which ways of running collectives this machine has, found at run time.

MPI (``mpi4py`` over the ``mpich`` wheel) is part of the course's requirements and is always there
after ``python3 dev.py setup``. PyTorch is never required: where it is installed (a hub image with
GPUs, say), ``torch.distributed`` adds ``gloo`` (CPU) and, with CUDA GPUs, ``nccl``. Nothing here
imports torch unless it is installed, and nothing fails when it is not.
"""

from __future__ import annotations

import importlib.util
from typing import Dict


def available_backends() -> Dict[str, str]:
    """``{backend: why}`` for each backend :func:`course.launch.run` can use here; a backend that is
    missing is absent from the dict (and :func:`missing_backends` says why).

    >>> "mpi" in available_backends()
    True
    """
    found, _ = _survey()
    return found


def missing_backends() -> Dict[str, str]:
    """``{backend: why it cannot run here}`` for the backends :func:`available_backends` leaves out."""
    _, missing = _survey()
    return missing


def _survey():
    found, missing = {}, {}
    if importlib.util.find_spec("mpi4py") is not None:
        import mpi4py

        found["mpi"] = f"mpi4py {mpi4py.__version__}"
    else:
        missing["mpi"] = "mpi4py is not installed (python3 dev.py setup installs it)"
    if importlib.util.find_spec("torch") is None:
        reason = "PyTorch is not installed (optional: a course admin can add it to a hub image)"
        missing["gloo"] = missing["nccl"] = reason
        return found, missing
    try:
        import torch
        import torch.distributed as dist
    except Exception as exc:  # noqa: BLE001 -- a broken torch install is reported, not raised
        missing["gloo"] = missing["nccl"] = f"PyTorch does not import: {type(exc).__name__}: {exc}"
        return found, missing
    if dist.is_available() and dist.is_gloo_available():
        found["gloo"] = f"torch {torch.__version__} (CPU)"
    else:
        missing["gloo"] = "this PyTorch build has no gloo backend"
    if not (dist.is_available() and dist.is_nccl_available()):
        missing["nccl"] = "this PyTorch build has no NCCL backend"
    elif not torch.cuda.is_available():
        missing["nccl"] = "no CUDA GPU is visible"
    else:
        found["nccl"] = f"torch {torch.__version__}, {torch.cuda.device_count()} GPU(s)"
    return found, missing
