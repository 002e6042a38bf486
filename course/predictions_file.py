"""``predictions.json``: the locked predictions a submission carries, read without any widget.

A prediction lock (:mod:`course.prediction`, an ipywidgets view) writes each locked answer to
``predictions.json`` in the notebook's folder; the file travels with the nbgrader submission.
Graders, the class report and hand grading only *read* it, so the reader lives here, with the
standard library only: importing it costs no ipywidgets, anywidget or mistune
(``tests/test_import_graph.py`` checks what the grading side imports).

>>> import json, tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> _ = (folder / PREDICTIONS_FILE).write_text(json.dumps({
...     "lab06/act1": {"value": "C", "locked": True},
...     "lab06/act2": {"value": float("nan")},
...     "lab06/act3": {"value": "B", "locked": False}}))
>>> sorted(read_predictions(folder))
['lab06/act1']
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

#: the file a prediction lock writes beside the notebook
PREDICTIONS_FILE = "predictions.json"


def plain(value: Any) -> bool:
    """True for a value a locked prediction may hold: a str, an int, a bool or a finite float."""
    return isinstance(value, (str, int, float, bool)) and not (
        isinstance(value, float) and not math.isfinite(value)
    )


def read_predictions(folder: str | os.PathLike = ".") -> dict[str, dict]:
    """Locked predictions saved in ``folder/predictions.json``, for graders.

    Never modifies the folder (a submission is evidence). A missing or
    unreadable file gives ``{}``; entries that are not objects holding a plain
    ``value`` (str, int, float, bool) are dropped.
    """
    path = Path(folder) / PREDICTIONS_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {
        str(k): v
        for k, v in data.items()
        if isinstance(v, dict) and plain(v.get("value")) and v.get("locked", True) is True
    }
