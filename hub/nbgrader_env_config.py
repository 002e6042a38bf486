"""nbgrader settings for everyone who runs nbgrader from the course's environment.

``python3 dev.py`` copies this file to ``.venv/etc/jupyter/nbgrader_config.py``,
a folder on nbgrader's config path (``jupyter --paths``), so a student's
``nbgrader fetch_assignment`` in their own home folder, and the Assignments tab
of their JupyterLab, load it even though they never see the course root's
``nbgrader_config.py``.
"""

import os
import sys

c = get_config()  # noqa: F821 (provided by nbgrader when it loads this file)

# The exchange every student and instructor of this machine shares (JupyterHub sets it for
# every user; see hub/jupyterhub_config.py). Unset: nbgrader's default, /usr/local/share/nbgrader/exchange.
if os.environ.get("NBGRADER_EXCHANGE"):
    c.Exchange.root = os.environ["NBGRADER_EXCHANGE"]

# On the course's JupyterHub, a student sees and submits to only the courses whose hub group
# nbgrader-<course_id> holds them (several courses share one exchange, kept apart).
if os.environ.get("COURSE_HUB_GROUPS") and os.environ.get("JUPYTERHUB_API_TOKEN"):
    c.Authenticator.plugin_class = "nbgrader.auth.JupyterHubAuthPlugin"

# nbgrader runs `alembic` (installed next to it) from PATH when it creates a gradebook; an
# environment that is not activated does not have it there.
_bin = os.path.dirname(sys.executable)
if _bin not in os.environ.get("PATH", "").split(os.pathsep):
    os.environ["PATH"] = _bin + os.pathsep + os.environ.get("PATH", "")
