"""The package is a tree of layers (DESIGN.md "Layers"): no import cycle, lazy imports included; the
layer diagram in ``course/__init__.py`` is the import graph; and the engine imports no content.

The graph is read from the source with :mod:`ast` (every ``import`` statement, at module level or
inside a function), so a cycle hidden in a lazy import is found without running anything. An old
module name (``course.exercises``, ``course.labs.activity``: :data:`course._moved.MOVED`; the grading
side's, :data:`autograder._moved.MOVED`) counts as the module it now names.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Dict, Iterable, List, Set, Tuple

import pytest

from autograder._moved import MOVED as GRADING_MOVED
from course._moved import MOVED as COURSE_MOVED

#: every old module name -> the module that now holds it
MOVED = {**COURSE_MOVED, **GRADING_MOVED}

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("course", "autograder", "hub")
#: the content: every chapter, every lab, and the list of them
CONTENT = ("course.chapters", "course.labs", "course.activities")
#: what must never import a chapter or a lab: the core, the instruments, the assessment engine, the
#: notebook API (which may import only the list, :mod:`course.activities`) and what they stand on
ENGINE = ("course.core", "course.instruments", "course.assess", "course.notebook_api", "course.prediction",
          "course.predictions_file",
          "course.ledger", "course.theme")
#: the one content module the notebook API may import: the list binds the engine to the content
API, LIST = "course.notebook_api", "course.activities"


def moved_to(name: str) -> str:
    """``name`` with an old (moved) module name replaced by the module's new name."""
    for old in sorted(MOVED, key=len, reverse=True):
        if name == old or name.startswith(old + "."):
            return MOVED[old] + name[len(old):]
    return name


def module_files() -> Dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def imports_of(name: str, path: Path, known: Set[str]) -> Set[str]:
    """Modules of ``known`` that ``name`` imports anywhere in its source (lazy imports too)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            # ``from pkg import sub`` imports the submodule ``pkg.sub`` when there is one
            targets = [f"{base}.{alias.name}" if moved_to(f"{base}.{alias.name}") in known else base
                       for alias in node.names]
        else:
            continue
        for target in map(moved_to, targets):
            while target and target not in known:  # ``import a.b.c`` of a name inside a.b
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_graph() -> Dict[str, Set[str]]:
    files = module_files()
    known = set(files)
    return {name: imports_of(name, path, known) for name, path in files.items()}


def find_cycle(graph: Dict[str, Set[str]]) -> List[str]:
    """One cycle of ``graph`` as a list of modules (first == last), or ``[]``."""
    state: Dict[str, int] = {}
    stack: List[str] = []

    def visit(node: str) -> List[str]:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return []

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return []


def test_the_graph_sees_lazy_and_relative_imports():
    graph = import_graph()
    assert "course.ledger" in graph["course.assess.checks"]  # imported inside a function
    assert "course.assess.registry" in graph["course.assess.kinds"]  # ``from .registry import ...``
    assert "course.activities" in graph["course.notebook_api.lab_session"]  # lazily, inside labs()
    # an old name counts as the module it now names
    assert moved_to("course.exercises.feedback") == "course.notebook_api.feedback"
    assert moved_to("autograder.classreport.build") == "autograder.reports.build"
    assert moved_to("autograder.reporting") == "autograder.reporting"  # a prefix of a name is not the name


def test_find_cycle_finds_a_cycle_and_accepts_a_tree():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []


def test_no_import_cycle_above_the_core():
    graph = import_graph()
    above = {name: {t for t in targets if not t.startswith("course.core")}
             for name, targets in graph.items() if not name.startswith("course.core")}
    assert find_cycle(above) == []


def test_no_import_cycle():
    assert find_cycle(import_graph()) == []


def content_imports(graph: Dict[str, Set[str]]) -> Dict[str, List[str]]:
    """``{engine module: the chapters, labs or list it imports}`` (the API may import the list)."""
    found = {}
    for name, targets in graph.items():
        if not within(name, ENGINE):
            continue
        allowed = (LIST,) if within(name, (API,)) else ()
        offending = sorted(t for t in targets if within(t, CONTENT) and not within(t, allowed))
        if offending:
            found[name] = offending
    return found


def within(name: str, packages: Iterable[str]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def test_the_engine_imports_no_chapter_or_lab():
    graph = import_graph()
    assert [p for p in ENGINE + CONTENT if p not in graph] == [], "a guarded package no longer exists"
    assert content_imports(graph) == {}


def test_the_content_guard_trips():
    """An engine (or API) module that imports a chapter or a lab is found, lazily too."""
    for engine in ("course.assess.checks", "course.core.collectives", "course.instruments.ring",
                   "course.notebook_api", "course.notebook_api.lab_session"):
        for content in ("course.chapters.ch01", "course.labs.lab05"):
            assert content_imports({engine: {content, "course.core"}}) == {engine: [content]}
    assert content_imports({"course.assess.checks": {"course.activities"}}) == {
        "course.assess.checks": ["course.activities"]}
    assert content_imports({"course.notebook_api": {"course.activities"}}) == {}


def test_every_content_package_is_guarded():
    """What the list imports, apart from the engine, is content: each such package is in CONTENT, so a
    new content package (course/moe/, listed in course.activities) fails here until it is guarded."""
    graph = import_graph()
    listed = {".".join(t.split(".")[:2]) for t in graph[LIST] if not within(t, ENGINE)}
    assert listed <= set(CONTENT), f"add {sorted(listed - set(CONTENT))} to CONTENT"
    assert {"course.chapters", "course.labs"} <= listed


# -- the layer diagram in course/__init__.py ------------------------------------------------------


def diagram(doc: str) -> Dict[str, Set[str]]:
    """The arrows of the layer diagram in ``doc``: ``{user: {used, ...}}`` (every package it names)."""
    block = doc.split("::", 1)[1].split("\n\n", 2)[1]
    arrows: Dict[str, Set[str]] = {}
    for line in block.splitlines():
        user, sep, used = line.partition("->")
        assert sep, f"not an arrow: {line!r}"
        targets = {name.strip() for name in used.split(",") if name.strip()}
        arrows.setdefault(user.strip(), set()).update(targets)
        for target in targets:
            arrows.setdefault(target, set())
    return arrows


def unit_of(module: str, units: Iterable[str]) -> str:
    """The diagram's package that holds ``module`` (the longest that is a prefix of it; ``course`` itself
    holds only ``course/__init__.py``), or ``""``."""
    if module in units:
        return module
    holders = [unit for unit in units if unit != "course" and module.startswith(unit + ".")]
    return max(holders, key=len, default="")


def reach(arrows: Dict[str, Set[str]], start: str) -> Set[str]:
    seen: Set[str] = set()
    todo = list(arrows.get(start, ()))
    while todo:
        unit = todo.pop()
        if unit not in seen:
            seen.add(unit)
            todo.extend(arrows.get(unit, ()))
    return seen


def diagram_errors(arrows: Dict[str, Set[str]], graph: Dict[str, Set[str]]) -> List[str]:
    """Where ``arrows`` and ``graph`` disagree: a module outside every package the diagram names, an import
    no arrow allows, an arrow no import uses."""
    errors = [f"{module} is in no package of the diagram" for module in sorted(graph)
              if not unit_of(module, arrows)]
    used: Set[Tuple[str, str]] = set()
    for module, targets in sorted(graph.items()):
        user = unit_of(module, arrows)
        for target in sorted(targets):
            used_unit = unit_of(target, arrows)
            if not user or not used_unit or used_unit == user:
                continue
            used.add((user, used_unit))
            if used_unit not in reach(arrows, user):
                errors.append(f"{module} imports {target}: no arrow from {user} reaches {used_unit}")
    errors += [f"the arrow {user} -> {target} is used by no import" for user, targets in sorted(arrows.items())
               for target in sorted(targets) if (user, target) not in used]
    return errors


def test_the_layer_diagram_is_the_import_graph():
    import course

    errors = diagram_errors(diagram(course.__doc__), import_graph())
    assert errors == [], "course/__init__.py's layer diagram is out of date:\n" + "\n".join(errors)


def test_the_diagram_check_trips():
    arrows = diagram("Layers::\n\n    a  ->  b\n    b  ->  c\n    d  ->\n\nprose")
    assert arrows == {"a": {"b"}, "b": {"c"}, "c": set(), "d": set()}
    graph = {"a": {"b.x"}, "b.x": {"c"}, "c": set(), "d": set()}
    assert diagram_errors(arrows, graph) == []
    assert diagram_errors(arrows, {**graph, "c": {"a"}}) == ["c imports a: no arrow from c reaches a"]
    assert diagram_errors(arrows, {**graph, "e.y": set()}) == ["e.y is in no package of the diagram"]
    assert diagram_errors(arrows, {**graph, "b.x": set()}) == ["the arrow b -> c is used by no import"]
    assert diagram_errors(arrows, {**graph, "d": {"c"}}) == ["d imports c: no arrow from d reaches c"]


#: what draws: a kernel that only checks, validates or grades never needs them
WIDGET_STACK = ("bqplot", "pandas", "ipywidgets", "anywidget", "matplotlib")
#: what every grading or checking kernel (and the grader's judge) imports
LEAN_ENTRY_POINTS = ("course.notebook_api", "course.exercises", "course.activities", "course.core",
                     "course.assess.checks", "course.notebook_api.lab_session", "course.labs.activity",
                     "autograder.judging.sandboxed_cleanroom")


@pytest.mark.parametrize("module", LEAN_ENTRY_POINTS)
def test_checking_and_grading_import_no_widget_stack(module):
    """``import course.exercises`` (every notebook's check and test cells, nbgrader's validator, the
    autograder's kernels and judge) must not pay for ipywidgets, bqplot and pandas (about 0.35 s of CPU);
    the instruments import them when a lab draws. Run in a fresh interpreter: this one has them already."""
    import subprocess
    import sys

    code = ("import importlib, json, sys; importlib.import_module(sys.argv[1]); "
            "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))")
    out = subprocess.run([sys.executable, "-c", code, module], capture_output=True, text=True, check=True,
                         cwd=ROOT).stdout
    loaded = set(__import__("json").loads(out.splitlines()[-1]))
    assert loaded & set(WIDGET_STACK) == set(), f"import {module} imports {sorted(loaded & set(WIDGET_STACK))}"


def test_instruments_package_names_resolve_on_first_use():
    """``course.instruments`` imports its views on first use: every public name, and a submodule as an
    attribute, still resolve to the defining module's object."""
    import importlib

    import course.instruments as package

    for name in package.__all__:
        source = importlib.import_module(f"course.instruments.{package._SOURCES[name]}")
        assert getattr(package, name) is getattr(source, name)
    assert set(package.__all__) == set(package._SOURCES)
    assert package.ring is importlib.import_module("course.instruments.ring")
    with pytest.raises(AttributeError):
        package.no_such_instrument


def test_instruments_names_are_declared_once_in_a_table():
    """``course.instruments`` declares each public name once, in its table :data:`PUBLIC` (submodule ->
    names): the lazy loader, ``__all__`` and :data:`MODULES` come from it, and the package never reads its
    own source to find them."""
    import course.instruments as package

    source = (ROOT / "course" / "instruments" / "__init__.py").read_text()
    code = source.split('"""', 2)[2]  # the docstring may name them
    assert "__file__" not in code and "import ast" not in code
    assert package.__all__ == [name for names in package.PUBLIC.values() for name in names]
    assert package.MODULES == tuple(package.PUBLIC)
    assert "AllreduceComparator" in package.__all__ and "SyncAudit" in package.__all__
    for name in package.__all__:
        assert len(re.findall(rf"\b{name}\b", code)) == 1, name


def test_every_instrument_class_is_in_the_table():
    """An instrument a submodule of the table defines but the table does not list would not be importable
    from ``course.instruments``: every :class:`Instrument` subclass there is listed, under its module."""
    import importlib
    import inspect

    import course.instruments as package

    for module_name, names in package.PUBLIC.items():
        module = importlib.import_module(f"course.instruments.{module_name}")
        defined = {name for name, value in vars(module).items()
                   if inspect.isclass(value) and issubclass(value, package.Instrument)
                   and value.__module__ == module.__name__ and not name.startswith("_")}
        assert defined <= set(names), f"{module_name} defines {sorted(defined - set(names))}, not in PUBLIC"


def test_old_import_paths_are_the_moved_modules():
    """Released notebooks, hidden tests and ``nbgrader_config.py`` import ``course.exercises`` and
    ``course.labs.activity``: in a fresh interpreter each old name (imported every way a notebook does)
    is the very module object of its new home, and no file is left at an old path."""
    import subprocess
    import sys

    code = """if True:
        import importlib, sys
        from course.exercises import check, grade_in_kernel, judge_json, show
        from course.exercises.feedback import InsertDerivations
        from course.labs.activity import LabSession
        from course.labs import activity
        import course.exercises.mastery
        import course.notebook_api as api
        assert check is api.check and judge_json is api.judge_json and show is api.show
        assert grade_in_kernel is api.grade_in_kernel
        assert InsertDerivations is importlib.import_module("course.notebook_api.feedback").InsertDerivations
        assert activity is importlib.import_module("course.notebook_api.lab_session")
        assert LabSession.__module__ == "course.notebook_api.lab_session"
        assert course.exercises.mastery is importlib.import_module("course.notebook_api.mastery")
        for table in ("course._moved", "autograder._moved"):
            for old, new in sorted(importlib.import_module(table).MOVED.items()):
                assert importlib.import_module(old) is sys.modules[old] is sys.modules[new], old
        # an instructor's nbgrader_config.py of before the split names classes by their old paths
        from traitlets.utils.importstring import import_item
        assert import_item("autograder.formgrader.SandboxedAutograde").__module__ == "autograder.engines.formgrader"
        from autograder.feedback import FEEDBACK_PREPROCESSORS
        assert FEEDBACK_PREPROCESSORS is importlib.import_module("autograder.grading.feedback").FEEDBACK_PREPROCESSORS
        print("same modules")
    """
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0 and out.stdout.split() == ["same", "modules"], out.stderr
    for old in MOVED:
        path = ROOT.joinpath(*old.split("."))
        assert not path.with_suffix(".py").exists() and not (path / "__init__.py").exists(), old


def old_names_imported(paths: Iterable[Path]) -> List[str]:
    """``path:line: name`` for each import statement in ``paths`` that names a module by an old name."""
    found = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            else:
                continue
            where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
            found += [f"{where}:{node.lineno}: {name}" for name in names if name in MOVED]
    return found


def test_first_party_code_imports_current_names_only():
    """The old names are for code the course does not own (released notebooks, an instructor's
    ``nbgrader_config.py``); the package, its tests, benchmarks, docs and configuration import each module
    by its current name."""
    paths = [path for folder in (*PACKAGES, "tests", "benchmarks", "docs") for path in (ROOT / folder).rglob("*.py")
             if "_build" not in path.parts and path.name != "_moved.py"]
    paths += [ROOT / "nbgrader_config.py", ROOT / "dev.py"]
    assert old_names_imported(paths) == []


def test_the_old_name_check_trips(tmp_path):
    path = tmp_path / "old.py"
    path.write_text("import course.exercises\nfrom autograder.grader import Grader\nfrom autograder import cli\n")
    found = old_names_imported([path])
    assert [line.split(": ")[1] for line in found] == ["course.exercises", "autograder.grader", "autograder.cli"]


def test_the_clean_rooms_program_needs_only_the_standard_library():
    """``course/assess/cleanroom_runner.py`` is copied into a sandbox that holds no course package: it imports
    the standard library only (and IPython's input transformer, for a cell with magics: the kernel's own), and
    importing it runs nothing (it runs as ``__main__``)."""
    import importlib
    import sys

    path = ROOT / "course" / "assess" / "cleanroom_runner.py"
    imported = {alias.name.split(".")[0] for node in ast.walk(ast.parse(path.read_text()))
                if isinstance(node, ast.Import) for alias in node.names}
    imported |= {(node.module or "").split(".")[0] for node in ast.walk(ast.parse(path.read_text()))
                 if isinstance(node, ast.ImportFrom)}
    allowed = set(sys.stdlib_module_names) | {"IPython"}
    assert imported and imported <= allowed, imported - allowed
    module = importlib.import_module("course.assess.cleanroom_runner")
    assert callable(module.main) and module.GRACE > 0


def test_every_folder_of_modules_is_a_package():
    """A folder of modules without ``__init__.py`` is a namespace package: not found by setuptools'
    ``packages.find`` (so missing from an installed course) and easy to shadow."""
    folders = {path.parent for package in PACKAGES for path in (ROOT / package).rglob("*.py")
               if "__pycache__" not in path.parts}
    assert sorted(str(f.relative_to(ROOT)) for f in folders if not (f / "__init__.py").is_file()) == []


#: what only a drawing kernel needs: the grading side imports none of it (nor mistune, where it needs no nbconvert)
WIDGET_LIBRARIES = ("ipywidgets", "anywidget", "bqplot")


def loaded_top_level(modules: Iterable[str]) -> Set[str]:
    """The top-level packages a fresh interpreter holds after importing ``modules``."""
    import json
    import subprocess
    import sys

    code = ("import importlib, json, sys\nfor name in sys.argv[1:]: importlib.import_module(name)\n"
            "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))")
    out = subprocess.run([sys.executable, "-c", code, *modules], capture_output=True, text=True, check=True,
                         cwd=ROOT).stdout
    return set(json.loads(out.splitlines()[-1]))


def grading_side_imports() -> Tuple[List[str], List[str]]:
    """Every module of ``autograder``, and every ``course`` module one of them imports anywhere (lazily
    too: what grading, hand grading, the class report or grading on submit import while they run)."""
    graph = import_graph()
    grading = sorted(name for name in graph if name.split(".")[0] == "autograder" and name != "autograder.__main__")
    course = sorted({target for name in grading for target in graph[name] if target.split(".")[0] == "course"})
    return grading, course


def test_the_grader_imports_no_widget_library():
    """Grading reads predictions, the activity list and the engine, never a widget: importing every module
    of the grading side, and every course module it imports (lazily too), loads no ipywidgets, anywidget or
    bqplot; the class report and the reading of ``predictions.json`` load no mistune either (nbgrader's
    steps bring it with nbconvert, the report needs neither)."""
    grading, course = grading_side_imports()
    assert "course.predictions_file" in course and "autograder.grading.grader" in grading
    assert "course.prediction" not in course, "the grading side imports the prediction lock widget"
    loaded = loaded_top_level(grading + course)
    assert loaded & set(WIDGET_LIBRARIES) == set(), sorted(loaded & set(WIDGET_LIBRARIES))
    lean = ["autograder.reports", "autograder.reports.build", "course.predictions_file"]
    assert "mistune" not in loaded_top_level(lean)


def test_the_widget_check_trips():
    """The same check on the prediction lock widget finds the widget libraries it imports."""
    assert {"ipywidgets", "anywidget", "mistune"} <= loaded_top_level(["course.prediction"])
