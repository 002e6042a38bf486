"""The course's kernel websocket connection sets TCP_NODELAY, and every way the course starts JupyterLab selects it."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path

import pytest
import tornado.web
import tornado.websocket
from jupyter_server.services.kernels.connection.channels import ZMQChannelsWebsocketConnection
from jupyter_server.services.kernels.websocket import KernelWebsocketHandler

from course import lab_server
from course.lab_server import SETTING, NoDelayKernelConnection

ROOT = Path(__file__).resolve().parents[1]


def test_the_setting_names_the_class_for_jupyter_server():
    from jupyter_server.serverapp import ServerApp

    app = ServerApp()
    app.kernel_websocket_connection_class = SETTING
    assert app.kernel_websocket_connection_class is NoDelayKernelConnection
    assert issubclass(NoDelayKernelConnection, ZMQChannelsWebsocketConnection)


def test_connect_sets_nodelay_on_the_browsers_socket(monkeypatch):
    """A real websocket over loopback: after connect() the server side of the socket has TCP_NODELAY."""
    monkeypatch.setattr(ZMQChannelsWebsocketConnection, "connect", lambda self: None)  # no kernel here
    seen = {}

    class Handler(KernelWebsocketHandler):  # jupyter_server's own handler, without its kernel and login
        def prepare(self):
            pass

        async def get(self):
            await tornado.websocket.WebSocketHandler.get(self)

        def check_origin(self, origin):
            return True

        def select_subprotocol(self, subprotocols):
            return None

        def on_close(self):
            pass

        def open(self):
            sock = self.ws_connection.stream.socket
            seen["before"] = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
            NoDelayKernelConnection(websocket_handler=self).connect()
            seen["after"] = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
            self.write_message("done")

    async def run():
        app = tornado.web.Application([(r"/ws", Handler)])
        server = app.listen(0, address="127.0.0.1")
        port = next(iter(server._sockets.values())).getsockname()[1]
        try:
            client = await tornado.websocket.websocket_connect(f"ws://127.0.0.1:{port}/ws")
            assert await asyncio.wait_for(client.read_message(), 10) == "done"
            client.close()
        finally:
            server.stop()

    asyncio.run(run())
    assert seen == {"before": 0, "after": 1}


@pytest.mark.parametrize("instructor", [False, True])
def test_hub_and_kubernetes_configs_select_it(instructor):
    from hub.k8s.role_config import role_files

    server = json.loads(role_files(instructor)["jupyter_server_config.json"])
    assert server["ServerApp"]["kernel_websocket_connection_class"] == SETTING


def test_dev_lab_and_browser_tests_select_it():
    for path in ("dev.py", "tests/browser/conftest.py"):
        assert f"--ServerApp.kernel_websocket_connection_class={SETTING}" in (ROOT / path).read_text(), path
    assert lab_server.__name__ + ".NoDelayKernelConnection" == SETTING
