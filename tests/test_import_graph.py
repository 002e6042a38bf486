"""The package is a tree of layers (DESIGN.md "Layers"): no import cycle, lazy imports included,
and the assessment engine imports no content module.

The graph is read from the source with :mod:`ast` (every ``import`` statement, at module level or
inside a function), so a cycle hidden in a lazy import is found without running anything.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, List, Set

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("course", "autograder", "hub")
#: the assessment engine and the content it must never import
ENGINE = "course.assess"
CONTENT = ("course.exercises.chapters", "course.labs", "course.activities")


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
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        for target in targets:
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
    assert "course.activities" in graph["course.labs.activity"]  # lazily, inside labs()


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


def test_the_engine_imports_no_content():
    graph = import_graph()
    engine = [name for name in graph if name == ENGINE or name.startswith(ENGINE + ".")]
    assert engine, "the engine package is missing"
    offending = {name: sorted(t for t in graph[name] if t.startswith(CONTENT)) for name in engine}
    assert {name: found for name, found in offending.items() if found} == {}


#: what draws: a kernel that only checks, validates or grades never needs them
WIDGET_STACK = ("bqplot", "pandas", "ipywidgets", "anywidget", "matplotlib")
#: what every grading or checking kernel (and the grader's judge) imports
LEAN_ENTRY_POINTS = ("course.exercises", "course.activities", "course.core", "course.assess.checks",
                     "course.labs.activity", "autograder.cleanroom")


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


def test_instruments_names_for_type_checkers_are_the_lazy_ones():
    """Type checkers and IDEs read the ``if TYPE_CHECKING:`` imports of ``course.instruments``, the
    running package ``_SOURCES``: both must list the same names from the same submodules, or one of
    them offers a name the other does not have."""
    import course.instruments as package

    tree = ast.parse((ROOT / "course" / "instruments" / "__init__.py").read_text())
    (block,) = [node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"]
    assert all(isinstance(node, ast.ImportFrom) and node.level == 1 for node in block.body)
    static = [(alias.asname or alias.name, node.module) for node in block.body for alias in node.names]
    assert sorted(static) == sorted(package._SOURCES.items())
