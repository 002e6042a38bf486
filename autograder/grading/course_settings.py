"""The instructor's nbgrader configuration, as grading reads it: the course's folders, its gradebook, and
nbgrader's own steps built with it.

``nbgrader_config.py`` in the course root is the one place an instructor configures nbgrader. Grading
reads it through nbgrader's own classes, so what works for ``nbgrader autograde`` works here too:

* where things are: ``c.CourseDirectory.db_url``, ``submitted_directory``, ``autograded_directory``,
  ``feedback_directory``, ``source_directory`` and ``directory_structure``
  (:meth:`CourseSettings.folder`, nbgrader's ``CourseDirectory.format_path``);
* how nbgrader's steps behave: each is built with the instructor's configuration
  (:meth:`CourseSettings.step`), so ``c.LimitOutput.max_lines``, ``c.ClearOutput.*`` or a late
  submission plugin (``c.AssignLatePenalties.plugin_class``, ``c.LateSubmissionPlugin.penalty_method``)
  take effect.

A course root without ``nbgrader_config.py`` gets nbgrader's defaults, the layout nbgrader documents.
The course root the grader was given wins over a ``c.CourseDirectory.root`` in the file.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Optional

CONFIG_FILE = "nbgrader_config.py"


def course_config(course_root):
    """What ``nbgrader_config.py`` in ``course_root`` configures (a traitlets ``Config``; empty without one).

    The loader gets a logger of its own: without one, traitlets logs "Using default logger" at DEBUG
    into the log of whatever application is running (the formgrader's Autograde log)."""
    from traitlets.config import Config
    from traitlets.config.loader import ConfigFileNotFound, PyFileConfigLoader

    if course_root is None or not (Path(course_root) / CONFIG_FILE).is_file():
        return Config()
    try:
        return PyFileConfigLoader(CONFIG_FILE, path=str(course_root),
                                  log=logging.getLogger(__name__)).load_config()
    except ConfigFileNotFound:
        return Config()


class CourseSettings:
    """The course root's nbgrader settings: its ``CourseDirectory`` and its configuration."""

    def __init__(self, course_root, config=None):
        from nbgrader.coursedir import CourseDirectory

        self.root = Path(course_root).resolve()
        self.config = course_config(self.root) if config is None else config
        self.coursedir = CourseDirectory(config=self.config, root=str(self.root))

    @property
    def db_url(self) -> str:
        """The gradebook's database URL (``c.CourseDirectory.db_url``; nbgrader's default is
        ``gradebook.db`` in the course root)."""
        return self.coursedir.db_url

    @property
    def gradebook_file(self) -> Optional[Path]:
        """The gradebook's file for a SQLite URL, else ``None`` (a database server)."""
        prefix = "sqlite:///"
        return Path(self.db_url[len(prefix):]) if self.db_url.startswith(prefix) else None

    def folder(self, step: str, student: str, assignment: str) -> Path:
        """Where nbgrader keeps ``step`` (``"submitted"``, ``"autograded"``, ``"feedback"``, ``"source"``,
        ``"release"``) of ``student``'s ``assignment`` (``"."`` for the instructor's own folders)."""
        directory = getattr(self.coursedir, f"{step}_directory")
        return Path(self.coursedir.format_path(directory, student, assignment))

    def step(self, cls, **kwargs):
        """nbgrader's (or nbconvert's) step ``cls`` built with the instructor's configuration."""
        return cls(config=self.config, **kwargs)
