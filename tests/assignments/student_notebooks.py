"""Release notebooks answered as a student would: honest, wrong, using the course package, blank.

Built from the release notebook in ``release/`` and each chapter's hand-written solution code for one
student's numbers (:func:`course.activities.answer_sources`); the wrong and package-using versions
change that honest code in ways a student does, never by copying anything the checks print.
"""

from __future__ import annotations

import copy
import os
import re
from pathlib import Path
from typing import Dict, Optional

import nbformat

ROOT = Path(__file__).resolve().parents[2]

KINDS = ("blank", "honest", "wrong", "package")


def release(name: str):
    return nbformat.read(str(ROOT / "release" / name / f"{name}.ipynb"), 4)


def _solution(source: str) -> str:
    """The solution region of an instructor's answer cell (the whole cell if it has none)."""
    found = re.search(r"### BEGIN SOLUTION\n(.*?)\n\s*### END SOLUTION", source, re.S)
    if found is None:
        return source
    if source.lstrip().startswith("def "):  # a function: keep the def line and docstring around it
        return re.sub(r"\s*### (BEGIN|END) SOLUTION", "", source)
    return found.group(1)


def _wrong(source: str, gid: str, part_names: Dict[str, tuple]) -> str:
    """``source`` made wrong the way a student's slip would: numbers off, the other option, a function
    off by one."""
    names, options, function = part_names.get(gid, ((), {}, None))
    if function:
        return (f"{source}\n\n_right_{function} = {function}\n"
                f"def {function}(*args):\n    return _right_{function}(*args) + 1\n")
    lines = [source]
    for name in names:
        if name in options:
            others = [o for o in options[name] if o != "__"]
            lines.append(f"{name} = [o for o in {others!r} if o != {name}][0]")
        else:
            lines.append(f"{name} = ({name} * 2 + 1 if type({name}) in (int, float) else "
                         f"list({name})[::-1] if type({name}) in (list, tuple) else {name} + '?')")
    return "\n".join(lines)


def lab_answers(name: str) -> Dict[str, str]:
    """A lab's answer cells as its source notebook has them (a lab's answers are the same code for
    every student: they read the instruments)."""
    source = nbformat.read(str(ROOT / "source" / name / f"{name}.ipynb"), 4)
    return {c.metadata["nbgrader"]["grade_id"]: c.source for c in source.cells
            if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("solution")}


def answer_parts(name: str) -> Dict[str, tuple]:
    """``{answer grade id: (names, options, function name or None)}`` of a chapter, from its declarations."""
    from course.activities import SYLLABUS

    out = {}
    for ex in SYLLABUS.by_name[name].exercises:
        for part in ex.parts:
            if part.function is not None:
                out[part.grade_id + "_answer"] = ((), {}, part.function.name)
            elif part.value is not None:
                out[part.grade_id + "_answer"] = (tuple(part.value.units), dict(part.value.options), None)
    return out


def notebook(name: str, student: str, kind: str):
    """The release notebook of ``name`` answered by ``student`` as ``kind`` (:data:`KINDS`).

    ``package``: the first value answer is computed after importing ``course.core`` (it works in the
    kernel, not where grading runs the code), the next value answer uses a name only that failing
    cell defines, and the first function calls ``course.core``; the rest is honest."""
    from course.activities import answer_sources

    nb = copy.deepcopy(release(name))
    if kind == "blank":
        return nb
    answers = answer_sources(name, student) or lab_answers(name)
    parts = answer_parts(name)
    used = {"value": 0, "function": 0}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        gid = meta.get("grade_id", "")
        if cell.cell_type == "markdown" and meta.get("solution") and meta.get("grade"):
            cell.source = "My own answer, in my own words."  # a hand-graded answer: written
            continue
        if gid not in answers:
            continue
        source = _solution(answers[gid])
        names, _, function = parts.get(gid, ((), {}, None))
        if kind == "wrong":
            source = _wrong(source, gid, parts)
        elif kind == "package" and function and used["function"] == 0:
            used["function"] += 1
            source += (f"\n\n_plain_{function} = {function}\n"
                       f"def {function}(*args):\n    import course.core\n    return _plain_{function}(*args)\n")
        elif kind == "package" and names and used["value"] == 0:
            used["value"] += 1
            source = f"import course.core as core\n_from_the_package = 1\n{source}"
        elif kind == "package" and names and used["value"] == 1:
            used["value"] += 1
            source = f"_factor = _from_the_package\n{source}"
        cell.source = source
    return nb


def write(nb, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))
    return path


def kernel_env(student: str, ledger: Path, notebook_path: Optional[Path] = None) -> dict:
    env = dict(os.environ, COURSE_STUDENT=student, COURSE_LEDGER=str(ledger), PYTHONHASHSEED="0")
    for var in ("NBGRADER_EXECUTION", "NBGRADER_VALIDATING", "JPY_SESSION_NAME"):
        env.pop(var, None)
    if notebook_path is not None:
        env["JPY_SESSION_NAME"] = str(notebook_path)
    return env


def run_visible(nb, folder: Path, env: dict):
    """Execute ``nb`` headless as Run All does (in ``folder``, a kernel with ``env``); return
    ``{exercise number: "right" | "not yet" | "not answered"}`` from its check cells' outputs."""
    from nbclient import NotebookClient

    NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(folder)}}).execute(env=env)
    said = {}
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id", "")
        if not gid.endswith("_check"):
            continue
        text = "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")
        found = re.search(r"Exercise (\d+\.\d+): (right|not yet|not answered)", text)
        assert found, f"{gid} said nothing a student could read: {text!r}"
        said[found.group(1)] = found.group(2)
    return said
