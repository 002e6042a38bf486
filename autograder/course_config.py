"""Reading a course's ``nbgrader_config.py``: the one loader every layer of grading uses.

``nbgrader_config.py`` in the course root is the one place an instructor configures nbgrader and the
course's grading. This module reads it (traitlets' own Python-file loader, as nbgrader does) and
nothing more, so the layers below grading (the sandbox's policy, :mod:`autograder.isolation.unsandboxed`)
and above it (:mod:`autograder.grading.course_settings`, which turns it into nbgrader's
``CourseDirectory`` and steps; the exchange, :mod:`autograder.records.exchange`) read the same file the
same way. It imports nothing of the course or of grading.
"""

from __future__ import annotations

import logging
from pathlib import Path

CONFIG_FILE = "nbgrader_config.py"


def _config_file(folder):
    """``nbgrader_config.py`` in ``folder`` as a traitlets ``Config`` (empty without one).

    The loader gets a logger of its own: without one, traitlets logs "Using default logger" at DEBUG
    into the log of whatever application is running (the formgrader's Autograde log)."""
    from traitlets.config import Config
    from traitlets.config.loader import ConfigFileNotFound, PyFileConfigLoader

    if folder is None or not (Path(folder) / CONFIG_FILE).is_file():
        return Config()
    try:
        return PyFileConfigLoader(CONFIG_FILE, path=str(folder), log=logging.getLogger(__name__)).load_config()
    except ConfigFileNotFound:
        return Config()


def course_config(course_root, jupyter_path: bool = False):
    """What ``nbgrader_config.py`` in ``course_root`` configures (a traitlets ``Config``; empty without one,
    or when ``course_root`` is ``None``).

    ``jupyter_path``: first the ``nbgrader_config.py`` files on Jupyter's config path (``jupyter --paths``;
    lowest priority first), as nbgrader's own commands read them: where the exchange is
    (``c.Exchange.root``) is often set there, for every user of a machine or hub. Grading itself reads
    the course root's file only, so a setting meant for another course never changes a grade."""
    from traitlets.config import Config

    config = Config()
    if jupyter_path:
        from jupyter_core.paths import jupyter_config_path

        for folder in reversed(jupyter_config_path()):
            config.merge(_config_file(folder))
    config.merge(_config_file(course_root))
    return config
