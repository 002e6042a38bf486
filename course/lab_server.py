"""The course's Jupyter server setting: kernel websockets that send each message at once.

Select it with ``--ServerApp.kernel_websocket_connection_class=course.lab_server.NoDelayKernelConnection``
(``dev.py lab``, the hub's per-person ``jupyter_server_config.json`` and the browser tests do).

Why: jupyter_server never disables Nagle's algorithm on a kernel's websocket (tornado leaves it on unless the
handler calls ``set_nodelay(True)``). After a widget update the kernel sends a ``status: busy`` frame and then,
a few milliseconds later, the ``comm_msg`` frames of the redraw. With Nagle on, the second small write waits
until the browser acknowledges the first, and the browser delays its ACK (Linux: 40 ms). Measured with
``benchmarks/bench_browser.py`` (ScalingExplorer, 60 moves, load 1.5): in a third of the moves the kernel dated
its ``comm_msg`` 0.3 ms after ``busy`` but the page received it 33 ms after ``busy``; these moves made every
instrument's p95 55-79 ms. With this class the stall is gone: ``bench_browser.py --moves 20``, every instrument's
p95 61-76 ms -> 33-49 ms, median 31-50 ms -> 22-34 ms (load average 1.3-2.0).
"""

from __future__ import annotations

from jupyter_server.services.kernels.connection.channels import ZMQChannelsWebsocketConnection

#: the value to give ``ServerApp.kernel_websocket_connection_class``
SETTING = "course.lab_server.NoDelayKernelConnection"


class NoDelayKernelConnection(ZMQChannelsWebsocketConnection):
    """jupyter_server's kernel websocket connection, with ``TCP_NODELAY`` set on the browser's socket."""

    def connect(self):
        self.websocket_handler.set_nodelay(True)
        return super().connect()
