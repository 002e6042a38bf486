"""Per-role Jupyter config folders for the image: ``<out>/jupyter-student`` and ``<out>/jupyter-instructor``.

On the one-machine hub, ``hub/setup.py`` writes each person's ``~/.jupyter`` for their role. In
Kubernetes the homes are fresh volumes, so the image carries both configurations and the hub's
``pre_spawn_hook`` (``values.yaml``) points ``JUPYTER_CONFIG_PATH`` at the person's role: students
get nbgrader's Assignments list only; instructors also the Formgrader, Courses and Create
Assignment (the same extension lists as ``hub/setup.py``).

Run at image build: ``python hub/k8s/role_config.py /etc/course``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from hub.setup import INSTRUCTOR_LAB_PLUGINS, INSTRUCTOR_SERVER_EXTENSIONS, KERNEL_CONNECTION  # noqa: E402 -- after the repository is put on sys.path

ROLES = ("student", "instructor")


def role_files(instructor: bool) -> dict:
    """``{relative path: JSON text}`` of one role's Jupyter config folder."""
    server = {"ServerApp": {"jpserver_extensions": {ext: instructor for ext in INSTRUCTOR_SERVER_EXTENSIONS},
                            "kernel_websocket_connection_class": KERNEL_CONNECTION}}
    page = {"disabledExtensions": {plugin: not instructor for plugin in INSTRUCTOR_LAB_PLUGINS}}
    page["disabledExtensions"]["@jupyterlab/apputils-extension:announcements"] = True
    return {"jupyter_server_config.json": json.dumps(server, indent=1),
            "labconfig/page_config.json": json.dumps(page, indent=1)}


def write(out: Path) -> None:
    for role in ROLES:
        for relative, text in role_files(role == "instructor").items():
            path = out / f"jupyter-{role}" / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text + "\n")


if __name__ == "__main__":
    write(Path(sys.argv[1]))
