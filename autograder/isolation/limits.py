"""The grading limits of one submission, declared once.

:class:`GradingLimits` declares each limit an instructor may set: its name, default, unit and help.
Everything that grades reads it:

* ``nbgrader_config.py``: ``c.GradingLimits.cell_timeout = 120`` sets it for the whole course;
* the command line (``course-autograde class``, ``single``, ``gradescope``): one flag per limit, named
  after it (``--cell-timeout``, ``--timeout``, ``--memory-mb``, ``--max-processes``, ``--scratch-mb``),
  over what ``nbgrader_config.py`` says (:func:`autograder.engines.options.limits`); the CI templates run
  these commands in the course root, so they read the same file;
* the formgrader's Autograde button: :class:`autograder.engines.formgrader.SandboxedAutograde` *is* a
  :class:`GradingLimits`, so ``c.GradingLimits.*`` and its older names ``c.SandboxedAutograde.*``
  both set it;
* the Gradescope bundle: ``course-autograde gradescope`` writes the limits it read into the
  bundle's ``settings.json``;
* the sandbox: :meth:`autograder.isolation.sandbox.Limits.of` turns them into the record it applies (seconds
  and bytes), whose defaults are these.
"""

from __future__ import annotations

from traitlets import Integer, TraitError
from traitlets.config import Configurable

MiB = 2**20


class GradingLimits(Configurable):
    """Resource limits of one submission (``c.GradingLimits.<name>`` in ``nbgrader_config.py``)."""

    cell_timeout = Integer(60, min=1, help="seconds a cell may run").tag(config=True, unit="s")
    timeout = Integer(300, min=1, help="seconds per submission: all its cells and its clean room").tag(
        config=True, unit="s")
    memory_mb = Integer(4096, min=1, help="address-space limit per process (MiB)").tag(config=True, unit="MiB")
    max_processes = Integer(256, min=1, help="process limit per submission").tag(config=True, unit="processes")
    scratch_mb = Integer(512, min=1, help="size of the in-memory folder a submission may write to "
                                          "(MiB; bubblewrap only)").tag(config=True, unit="MiB")

    @classmethod
    def names(cls):
        """The limits' names, in declaration order (each is a trait, a config name and a CLI flag)."""
        return [name for name in cls.class_own_traits(config=True)]

    @classmethod
    def default(cls, name: str) -> int:
        return cls.class_traits()[name].default_value

    @classmethod
    def flag(cls, name: str) -> str:
        """The command-line flag of limit ``name``: ``--cell-timeout`` for ``cell_timeout``."""
        return "--" + name.replace("_", "-")

    def override(self, **values) -> "GradingLimits":
        """Set the limits given (``None`` leaves one as it is); ``ValueError`` names the flag of a bad one."""
        for name, value in values.items():
            if value is None:
                continue
            try:
                setattr(self, name, value)
            except TraitError:
                raise ValueError(f"{self.flag(name)} (c.GradingLimits.{name}) must be a whole number >= 1, "
                                 f"got {value!r}") from None
        return self
