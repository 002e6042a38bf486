"""Functions the launch tests run on real ranks (importable, so they go by 'module:function')."""

import os
import time

import numpy as np


def rank_and_size(comm, scale=1.0):
    return {"rank": comm.Get_rank(), "size": comm.Get_size(), "data": np.arange(3) * scale}


def sum_of_ranks(comm):
    from mpi4py import MPI

    return comm.allreduce(comm.Get_rank(), op=MPI.SUM)


def one_rank_raises(comm):
    if comm.Get_rank() == 1:
        raise ValueError("chunk 3 went to the wrong neighbour")
    comm.Barrier()  # the others wait for rank 1 forever: the launch must end them
    return "unreachable"


def both_receive_first(comm):
    buf = np.zeros(4)
    comm.Recv(buf, source=1 - comm.Get_rank())
    comm.Send(buf, dest=1 - comm.Get_rank())


def sleep_long(comm, seconds=60.0):
    print(f"rank {comm.Get_rank()} up", flush=True)
    time.sleep(seconds)


def reports_progress(comm, steps=5):
    from course.launch import report

    for step in range(steps):
        if comm.Get_rank() == 0:
            report(step + 1, steps)
        time.sleep(0.02)
    return steps


class _RunsCode:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):  # unpickling this would create a file: the reader must refuse it
        return (open, (self.path, "w"))


def hostile_result(comm, path):
    return _RunsCode(path)


def pid_of(comm):
    return os.getpid()


def one_rank_exits(comm, status=3):
    """Rank 1 leaves without a result or an error (as os._exit in a student's ring would); the rest wait."""
    if comm.Get_rank() == 1:
        os._exit(status)
    comm.Barrier()
    return "unreachable"


def one_rank_crashes(comm):
    """Rank 1 dies of a segmentation fault (as a crash in C code would); the rest wait for it."""
    import signal

    if comm.Get_rank() == 1:
        os.kill(os.getpid(), signal.SIGSEGV)
    comm.Barrier()
    return "unreachable"
