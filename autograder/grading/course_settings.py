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

The file is read by :func:`autograder.course_config.course_config`, the one loader (the sandbox's policy
reads it too). A course root without ``nbgrader_config.py`` gets nbgrader's defaults, the layout nbgrader documents.
The course root the grader was given wins over a ``c.CourseDirectory.root`` in the file.

Every route reads the course through this one helper: ``course-autograde`` (:mod:`autograder.engines.cli`),
grading on submit, the formgrader's Autograde and Generate Feedback, the grade policy and term records
(:mod:`autograder.records`), the Gradescope bundle. Where a route grades in a throw-away copy of the
course (:meth:`CourseSettings.scratch`), the copy keeps the instructor's folders and steps but has its
own root and gradebook, so nothing it does reaches the course's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, Optional

from ..course_config import CONFIG_FILE, course_config


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

    def has_assignment(self, assignment: str) -> bool:
        """Whether the gradebook exists and knows ``assignment``."""
        from nbgrader.api import MissingEntry

        from ..compat import open_gradebook

        if self.gradebook_file is not None and not self.gradebook_file.is_file():
            return False
        with open_gradebook(self.db_url) as gb:
            try:
                gb.find_assignment(assignment)
                return True
            except MissingEntry:
                return False

    def folder(self, step: str, student: str, assignment: str) -> Path:
        """Where nbgrader keeps ``step`` (``"submitted"``, ``"autograded"``, ``"feedback"``, ``"source"``,
        ``"release"``) of ``student``'s ``assignment`` (``"."`` for the instructor's own folders)."""
        directory = getattr(self.coursedir, f"{step}_directory")
        return Path(self.coursedir.format_path(directory, student, assignment))

    def step_root(self, step: str) -> Path:
        """The folder that holds every student's ``<student>/<assignment>/`` of ``step`` (``root/submitted``
        in nbgrader's layout; the course's commands expect ``directory_structure`` to end in
        ``{student_id}/{assignment_id}``, nbgrader's default)."""
        return Path(self.coursedir.format_path(getattr(self.coursedir, f"{step}_directory"), ".", ".")).resolve()

    #: nbgrader's folders of a course, in the order a job copies or reads them
    STEPS = ("source", "release", "submitted", "autograded", "feedback")

    def layout(self) -> Dict[str, str]:
        """``{step: its folder relative to the course root}`` (POSIX) for each of :data:`STEPS`, as
        ``nbgrader_config.py`` names them (``submitted`` -> ``"handins"`` for a course that renamed it).

        What a job that runs on another machine (a CI checkout, a Kubernetes pod) needs: the course
        root travels, so every folder must lie inside it; ``ValueError`` names one that does not."""
        found = {}
        for step in self.STEPS:
            folder = self.step_root(step)
            try:
                found[step] = folder.relative_to(self.root).as_posix()
            except ValueError:
                raise ValueError(f"c.CourseDirectory.{step}_directory puts {step} at {folder}, outside the course "
                                 f"root {self.root}: a grading job elsewhere (CI, Kubernetes) copies the course "
                                 "root only, so keep every folder inside it") from None
            if found[step] == ".":
                raise ValueError(f"c.CourseDirectory.{step}_directory makes {step} the course root itself")
        return found

    def is_step_folder(self, folder, step: str) -> bool:
        """Whether ``folder`` is this course's folder of ``step`` (e.g. what nbgrader collected)."""
        return Path(folder).resolve() == self.step_root(step)

    def scratch(self, folder) -> "CourseSettings":
        """A throw-away course at ``folder`` configured as this one (folder names, nbgrader's steps, limits)
        but with its own root and gradebook (``folder/gradebook.db``): ``nbgrader_config.py`` there loads
        the instructor's and then pins ``root`` and ``db_url``, for this process and for nbgrader run there."""
        folder = Path(folder).resolve()
        lines = ["c = get_config()  # noqa: F821 -- a throw-away copy of a course (autograder/grading/course_settings.py)"]
        own = self.root / CONFIG_FILE
        if own.is_file():
            lines.append(f"load_subconfig({str(own)!r})  # noqa: F821 -- the instructor's settings")
        lines += [f"c.CourseDirectory.root = {str(folder)!r}",
                  f"c.CourseDirectory.db_url = {'sqlite:///' + str(folder / 'gradebook.db')!r}"]
        (folder / CONFIG_FILE).write_text("\n".join(lines) + "\n")
        return CourseSettings(folder)

    def step(self, cls, **kwargs):
        """nbgrader's (or nbconvert's) step ``cls`` built with the instructor's configuration."""
        return cls(config=self.config, **kwargs)
