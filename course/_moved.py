"""Old import paths of moved modules keep working: each is an alias of the module's new home.

Released notebooks, hidden tests, ``nbgrader_config.py`` and older branches import
``course.exercises`` (now :mod:`course.notebook_api`) and ``course.labs.activity`` (now
:mod:`course.notebook_api.lab_session`); the grading side's old module paths are listed in
:mod:`autograder._moved` and use the same finder. ``import course`` puts :class:`MovedModules` first on
:data:`sys.meta_path`; importing an old name imports the new module and binds the old name to the
*same* module object, so ``course.exercises.REGISTRY is course.notebook_api.REGISTRY`` and a test
that monkeypatches one patches the other.

Why an alias and not a stub file at the old path: a file left at the old path makes git see the
move as an edit of that path plus a new file, so edits made on other branches to the old file would
conflict instead of following the move; with no file left there, git's rename detection carries them
to the new home. ``tests/test_import_graph.py`` reads :data:`MOVED` to resolve old names.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
from typing import Dict

#: old module name -> the module that now holds it
MOVED: Dict[str, str] = {
    "course.exercises": "course.notebook_api",
    "course.exercises.feedback": "course.notebook_api.feedback",
    "course.exercises.mastery": "course.notebook_api.mastery",
    "course.labs.activity": "course.notebook_api.lab_session",
    "course.assess.cleanroom": "course.assess.cleanroom_protocol",
}


class MovedModules:
    """A :data:`sys.meta_path` finder and loader that binds each old name of ``table`` (``{old: new}``,
    :data:`MOVED` by default) to its new module. An old name is a package when the table lists a
    module inside it."""

    def __init__(self, table: Dict[str, str] = MOVED):
        self.table = table

    def find_spec(self, name, path=None, target=None):
        if name not in self.table:
            return None
        is_package = any(old.startswith(name + ".") for old in self.table)
        return importlib.machinery.ModuleSpec(name, self, is_package=is_package)

    def create_module(self, spec):
        return None  # a placeholder that exec_module replaces

    def exec_module(self, module) -> None:
        # the import system returns whatever sys.modules holds for the name once exec_module is done
        sys.modules[module.__name__] = importlib.import_module(self.table[module.__name__])


def install(table: Dict[str, str] = MOVED) -> None:
    """Put one :class:`MovedModules` for ``table`` first on :data:`sys.meta_path` (idempotent), ahead of any
    finder that could find a stale folder at an old path."""
    if not any(isinstance(finder, MovedModules) and finder.table is table for finder in sys.meta_path):
        sys.meta_path.insert(0, MovedModules(table))
