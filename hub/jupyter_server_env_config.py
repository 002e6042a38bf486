"""Every Jupyter server of the course's environment puts that environment's commands on its terminals' PATH.

``python3 dev.py setup`` copies this file to ``<venv>/etc/jupyter/jupyter_server_config.py``, a config file
every Jupyter server run from the environment reads, however it was started: ``python3 dev.py lab``, a plain
``.venv/bin/jupyter lab`` from a shell that never activated the environment, or a hub's single-user server.
The student docs ask for ``course student NAME`` in a JupyterLab Terminal; without this, ``course`` was found
only under ``dev.py lab``.

Two things hid it:

* the server's own PATH need not hold the environment's ``bin`` (``.venv/bin/jupyter lab`` runs without
  activating): the folder of the running Python is put in front of the server's PATH, which terminals and
  kernels inherit;
* a server not started from a terminal (a hub's spawner, ``dev.py lab`` in the background) opens a *login*
  shell, whose ``/etc/profile`` sets PATH afresh: the terminal runs the login shell's profile first and then
  puts the environment's ``bin`` back in front, before it hands over to the user's interactive shell.

A ``shell_command`` the server is given (``--ServerApp.terminado_settings=shell_command=...``, a hub's own
config) is kept: the PATH of the server still carries the environment's ``bin``.
"""

import os
import shlex
import shutil
import sys

c = get_config()  # noqa: F821 -- provided by the Jupyter config loader

ENV_BIN = os.path.dirname(os.path.abspath(sys.executable))
_path = os.environ.get("PATH", "")
if ENV_BIN not in _path.split(os.pathsep):
    os.environ["PATH"] = ENV_BIN + (os.pathsep + _path if _path else "")

if os.name != "nt":
    _wrapper = "/bin/bash" if os.path.exists("/bin/bash") else "/bin/sh"
    _shell = os.environ.get("SHELL") or _wrapper
    if not shutil.which(_shell):
        _shell = _wrapper
    _settings = dict(c.ServerApp.terminado_settings) if "terminado_settings" in c.ServerApp else {}
    _settings.setdefault("shell_command", [
        _wrapper, "-l", "-c",
        f"PATH={shlex.quote(ENV_BIN)}:\"$PATH\"; export PATH; exec {shlex.quote(_shell)} -i"])
    c.ServerApp.terminado_settings = _settings
