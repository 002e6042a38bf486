"""Ranks never outlive the notebook's kernel: a real Jupyter kernel starts a long launch, is restarted
(as the Restart button does: the kernel process is killed and a new one started), and every rank ends."""

import sys
import uuid
from pathlib import Path

from jupyter_client.manager import KernelManager

from .test_launch import HELPERS, marked, wait_until

ROOT = Path(__file__).resolve().parents[2]


def test_a_kernel_restart_ends_every_rank_the_kernel_started():
    mark = uuid.uuid4().hex
    km = KernelManager(kernel_name="python3")
    km.kernel_spec.argv[0] = sys.executable  # the course's environment, whatever "python" is on PATH
    km.start_kernel(cwd=str(ROOT))
    try:
        client = km.client()
        client.start_channels()
        client.wait_for_ready(timeout=60)
        client.execute(f"from course import launch\n"
                       f"launch.run('{HELPERS}:sleep_long', ranks=2, timeout=300, progress=True, "
                       f"env={{'COURSE_TEST_MARK': {mark!r}}})")
        assert wait_until(lambda: len(marked(mark)) >= 3, 60), "the ranks never started"
        km.restart_kernel(now=True)
        assert wait_until(lambda: marked(mark) == [], 15), f"left behind: {marked(mark)}"
        client.stop_channels()
    finally:
        km.shutdown_kernel(now=True)
