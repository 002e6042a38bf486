"""Where the course's nbgrader exchange is, read from its configuration without changing folder.

``course_config`` reads ``nbgrader_config.py`` as nbgrader does (the Jupyter config path, then the
course root's own file: :func:`autograder.course_config.course_config`), but from ``root``
given, never through ``os.chdir``: the grading-on-submit service and the formgrader's server run
threads, and a folder change is the whole process's.
"""

from __future__ import annotations

import os
from pathlib import Path


def course_config(root):
    """The course's nbgrader configuration (Jupyter config path first, then ``root/nbgrader_config.py``)."""
    from ..course_config import course_config as read

    return read(Path(root).resolve(), jupyter_path=True)


def exchange_course(root) -> Path:
    """``<exchange root>/<course id>`` from the course's nbgrader configuration."""
    config = course_config(root)
    exchange = config.Exchange.get("root") or os.environ.get("NBGRADER_EXCHANGE") or "/srv/nbgrader/exchange"
    course_id = config.CourseDirectory.get("course_id") or config.Exchange.get("course_id")
    if not course_id:
        raise ValueError("nbgrader_config.py sets no CourseDirectory.course_id: the exchange needs it")
    return Path(exchange) / course_id


def exchange_inbound(root) -> Path:
    """``<exchange root>/<course id>/inbound``: where students' submissions arrive."""
    return exchange_course(root) / "inbound"
