"""The environment is the lock: ``requirements/dev.txt`` pins and hashes every package ``.venv`` holds,
the three sets are layered (grading within course within dev), every top-level pin of ``requirements/*.in``
is locked, every distribution the repository imports is declared, and ``dev.py`` notices any difference
(CI runs ``dev.py setup``).
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _dev():
    spec = importlib.util.spec_from_file_location("course_dev_py_env", ROOT / "dev.py")
    dev = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(dev)  # dev.py only acts under __main__
    return dev


def test_the_running_environment_is_exactly_the_lock():
    """This process's interpreter (.venv, as dev.py built it) holds the locked set and pip check is clean."""
    dev = _dev()
    assert dev.lock_problems(Path(sys.executable)) == []


def test_the_lock_holds_every_top_level_pin_and_only_exact_hashed_pins():
    dev = _dev()
    assert dev.stale_lock() == []
    for name in dev.SETS:
        text = dev.lock_file(name).read_text()
        assert "://" not in text and "--index" not in text and "--extra-index" not in text  # never a registry
        assert "--find-links" not in text and "--trusted-host" not in text and "/opt/" not in text
        lines = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
        pins = [line for line in lines if not line.startswith(" ")]
        assert pins == sorted(pins, key=lambda line: line.split("==")[0])
        # a pin is ``name==version \``, then one ``--hash=sha256:...`` line for each file of that release
        assert all(re.fullmatch(r"[a-z0-9-]+==[^\s\\]+ \\", line) for line in pins), name
        assert all(re.fullmatch(r"    --hash=sha256:[0-9a-f]{64}( \\)?", line) for line in lines if line.startswith(" "))
        blocks = re.split(r"\n(?=[a-z0-9-]+==)", "\n".join(lines))
        assert len(blocks) == len(pins) and all("--hash=sha256:" in block for block in blocks), name
        names = set(dev.read_pins(dev.lock_file(name)))
        assert not names & set(dev.UNUSED) and not names & set(dev.INSTALLER) and dev.PROJECT not in names
    # the runtime dependencies of pyproject.toml are pinned at the grading set's versions (grading images
    # install that set and the course, then run pip check)
    pyproject = (ROOT / "pyproject.toml").read_text()
    dependencies = re.findall(r'^\s+"([A-Za-z0-9_.-]+)==([^"]+)",$', pyproject, re.M)
    assert len(dependencies) >= 10
    for name, version in dependencies:
        assert dev.read_pins(dev.lock_file("grading"))[dev.canonical(name)] == version
    floor = re.search(r'^requires-python = ">=([0-9.]+)"$', pyproject, re.M)[1]
    assert tuple(map(int, floor.split("."))) == dev.PYTHON_FLOOR


def test_the_sets_are_layered_and_grading_leaves_out_the_tools():
    dev = _dev()
    grading, course, development = (dev.read_pins(dev.lock_file(name)) for name in dev.SETS)
    assert grading.items() <= course.items() <= development.items()
    tools = {"pytest", "hypothesis", "playwright", "sphinx", "ruff", "myst-nb", "jupyterhub"}
    assert not tools & set(grading)
    assert "jupyterhub" in course and not (tools - {"jupyterhub"}) & set(course)
    assert {"nbgrader", "ipykernel", "nh3", "ipywidgets"} <= set(grading)


def test_the_python_floor_is_the_highest_one_a_locked_release_asks_for():
    """``requires-python`` (dev.PYTHON_FLOOR) is the highest lower bound among the installed releases."""
    dev = _dev()
    floors = []
    for dist in importlib.metadata.distributions():
        for bound in re.findall(r">=\s*([0-9]+(?:\.[0-9]+)*)", dist.metadata.get("Requires-Python") or ""):
            parts = tuple(int(part) for part in bound.split("."))
            floors.append(parts + (0,) * (3 - len(parts)))
    assert max(floors) == dev.PYTHON_FLOOR


#: first-party top-level names (this repository's packages, scripts and test helpers)
FIRST_PARTY = {"course", "autograder", "hub", "dev", "conftest", "tests", "benchmarks", "role_config"}
#: imports that are optional on purpose, each behind an ImportError or a skip that says why
OPTIONAL = {"mlsysim": "the benchmarks compare with the source material's solver where it is installed",
            "torch": "Lab 08 uses torch.distributed where PyTorch is installed"}


def _imported_top_level_names(source: str) -> set:
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def _code_of(path: Path) -> list:
    if path.suffix == ".py":
        return [path.read_text()]
    cells = json.loads(path.read_text())["cells"]
    return ["\n".join(line for line in "".join(cell["source"]).splitlines() if not line.lstrip().startswith(("%", "!")))
            for cell in cells if cell["cell_type"] == "code"]


def test_every_imported_distribution_is_declared():
    """Each third-party module that code of this repository imports (packages, tests, docs, benchmarks,
    notebooks) belongs to a distribution pinned in requirements/*.in; what ``course`` and ``autograder``
    import is in pyproject.toml's dependencies as well."""
    dev = _dev()
    declared = set(dev.read_pins(dev.input_file(dev.DEV_SET), layers=True))
    pyproject = {dev.canonical(name)
                 for name in re.findall(r'^\s+"([A-Za-z0-9_.-]+)==', (ROOT / "pyproject.toml").read_text(), re.M)}
    owners = importlib.metadata.packages_distributions()
    skip = {".venv", "build", ".git", "__pycache__", "release"}
    undeclared, unlisted, seen = {}, {}, set()
    for path in sorted(ROOT.rglob("*")):
        if path.suffix not in (".py", ".ipynb") or skip & set(path.relative_to(ROOT).parts):
            continue
        for source in _code_of(path):
            try:
                names = _imported_top_level_names(source)
            except SyntaxError:
                continue  # a notebook cell a student completes (nbgrader's placeholders)
            for module in names - set(sys.stdlib_module_names) - FIRST_PARTY - set(OPTIONAL):
                where = str(path.relative_to(ROOT))
                seen.add(module)
                distributions = {dev.canonical(d) for d in owners.get(module, [])}
                if not distributions & declared:
                    undeclared.setdefault(module, where)
                elif where.split("/")[0] in ("course", "autograder") and not distributions & pyproject:
                    unlisted.setdefault(module, where)
    assert {"numpy", "nbgrader", "ipywidgets", "pytest", "sphinx"} <= seen  # the scan sees the repository
    assert undeclared == {}, "imported, but pinned in no requirements/*.in"
    assert unlisted == {}, "imported by the package, but not in pyproject.toml's dependencies"


def test_a_stale_lock_and_a_drifted_environment_are_reported(tmp_path, monkeypatch):
    dev = _dev()
    requirements = tmp_path / "requirements"
    requirements.mkdir()
    (requirements / "grading.in").write_text("numpy==2.4.6\nnbgrader==9.9.9  # a bump not locked yet\n")
    (requirements / "course.in").write_text("-r grading.in\n-c grading.txt\njupyterhub==6.1.1\n")
    (requirements / "dev.in").write_text("-r course.in\n-c course.txt\n")
    (requirements / "grading.txt").write_text("# header\nnbgrader==0.9.6 \\\n    --hash=sha256:ab\nnumpy==2.4.6\n")
    (requirements / "course.txt").write_text("jupyterhub==6.1.1\nnbgrader==0.9.6\nnumpy==2.4.5\n")
    (requirements / "dev.txt").write_text("jupyterhub==6.1.1\nnbgrader==0.9.6\nnumpy==2.4.5\ntornado==6.6.1\n")
    (tmp_path / "requirements.txt").write_text("-r requirements/dev.txt\nrich==14.0.0\n")
    monkeypatch.setattr(dev, "ROOT", tmp_path)
    monkeypatch.setattr(dev, "REQUIREMENTS", requirements)
    monkeypatch.setattr(dev, "LOCK", requirements / "dev.txt")
    assert dev.stale_lock() == [
        "requirements/grading.in pins nbgrader==9.9.9, requirements/grading.txt has 0.9.6",
        "requirements/course.in pins nbgrader==9.9.9, requirements/course.txt has 0.9.6",
        "requirements/course.in pins numpy==2.4.6, requirements/course.txt has 2.4.5",
        "requirements/course.txt has numpy==2.4.5 where requirements/grading.txt has 2.4.6",
        "requirements/dev.in pins nbgrader==9.9.9, requirements/dev.txt has 0.9.6",
        "requirements/dev.in pins numpy==2.4.6, requirements/dev.txt has 2.4.5",
        "requirements.txt says 'rich==14.0.0': top-level pins go in requirements/*.in"]
    with pytest.raises(SystemExit, match="run `python3 dev.py lock`"):
        dev.install_locked()
    present = {"numpy": "2.4.6", "tornado": "6.5.0", "rfc3987-syntax": "1.1.0", "pip": "23.2.1",
               dev.PROJECT: "0.1.0"}
    monkeypatch.setattr(dev, "installed", lambda python: dict(present))
    problems = dev.lock_problems(Path(sys.executable))
    assert problems[:4] == ["jupyterhub==6.1.1 is locked but not installed", "nbgrader==0.9.6 is locked but not installed",
                            "numpy is 2.4.6, locked at 2.4.5", "tornado is 6.5.0, locked at 6.6.1"]
    assert "rfc3987-syntax==1.1.0 is installed but not locked" in problems


def test_read_pins_refuses_what_is_not_an_exact_pin(tmp_path):
    dev = _dev()
    loose = tmp_path / "r.txt"
    loose.write_text("numpy==2.4.6\njupyter_client>=8\n")
    with pytest.raises(SystemExit, match="line 2 is not a name==version pin"):
        dev.read_pins(loose)
    loose.write_text("--extra-index-url https://example.org/simple\n")
    with pytest.raises(SystemExit, match="line 1"):
        dev.read_pins(loose)
    loose.write_text("Jupyter_Client==8.10.0 \\\n    --hash=sha256:abc\nmyst-parser[linkify]==4.0.1\n")
    assert dev.read_pins(loose) == {"jupyter-client": "8.10.0", "myst-parser": "4.0.1"}
