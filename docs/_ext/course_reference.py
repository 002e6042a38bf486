"""References generated from the code, never copied by hand.

- :func:`course_parser` and :func:`autograde_parser`: the parsers of the ``course`` and
  ``course-autograde`` command lines, for sphinx-argparse's ``argparse`` directive.
- ``.. course-settings:: PACKAGE ...``: every traitlets setting (``.tag(config=True)``) that a
  class of those packages declares, with its type, default and help, as
  ``c.Class.name = value`` lines of ``nbgrader_config.py``.
- ``.. core-api:: PACKAGE``: one section per public module of the package, documented by autodoc
  from its numpydoc docstrings (a new module appears without an edit here).
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import re
from pathlib import Path
from unittest import mock

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles


class _Captured(Exception):
    def __init__(self, parser):
        self.parser = parser


def parser_of(main) -> argparse.ArgumentParser:
    """The parser that ``main()`` builds, caught as it parses (nothing runs)."""
    def catch(self, *args, **kwargs):
        raise _Captured(self)

    with mock.patch.object(argparse.ArgumentParser, "parse_args", catch):
        try:
            main([])
        except _Captured as caught:
            return caught.parser
    raise RuntimeError(f"{main.__module__}.main() parsed no arguments")


def _verbatim_description(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """A description the parser prints as written (``RawDescriptionHelpFormatter``) is shown
    as written on the page too, not parsed as reStructuredText."""
    if parser.description and issubclass(parser.formatter_class, argparse.RawDescriptionHelpFormatter):
        first, _, rest = parser.description.strip().partition("\n")
        body = "\n".join("   " + line for line in rest.strip("\n").splitlines())
        parser.description = f"{first}\n\n::\n\n{body}\n" if body else first
    return parser


def course_parser() -> argparse.ArgumentParser:
    from course import cli

    if hasattr(cli, "build_parser"):
        return _verbatim_description(cli.build_parser())
    return _verbatim_description(parser_of(cli.main))


def autograde_parser() -> argparse.ArgumentParser:
    from autograder.engines import cli

    return cli.build_parser()


def _modules(package: str):
    """``package`` and every module below it, imported, in name order (private ones left out).

    Folders are walked as files, so a namespace package (a folder without ``__init__.py``, such
    as ``course/assess``) is documented like any other.
    """
    root = importlib.import_module(package)
    yield root
    names = set()
    for folder in map(Path, root.__path__):
        for path in folder.rglob("*.py"):
            parts = path.relative_to(folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            if parts and not any(part.startswith("_") for part in parts):
                names.add(".".join((package, *parts)))
    for name in sorted(names):
        yield importlib.import_module(name)


def settings_of(packages) -> list:
    """``[(class, [(name, trait), ...])]``: the configurable traits each class of ``packages`` declares."""
    from traitlets import HasTraits

    found, seen = [], set()
    for package in packages:
        for module in _modules(package):
            for _, cls in inspect.getmembers(module, inspect.isclass):
                if cls in seen or cls.__module__ != module.__name__ or not issubclass(cls, HasTraits):
                    continue
                seen.add(cls)
                own = cls.class_own_traits(config=True)
                if own:
                    found.append((cls, sorted(own.items())))
    return sorted(found, key=lambda item: (item[0].__module__, item[0].__name__))


def _default(trait) -> str:
    return repr(trait.default())


class CourseSettings(SphinxDirective):
    """A section per configurable class: its settings as a table, its first docstring paragraph."""

    required_arguments = 1
    optional_arguments = 10

    def run(self):
        lines = []
        for cls, traits in settings_of(self.arguments):
            path = f"{cls.__module__}.{cls.__name__}"
            doc = (inspect.getdoc(cls) or "").split("\n\n")[0].replace("\n", " ")
            lines += [path, "-" * len(path), "", doc, "",
                      ".. list-table::", "   :header-rows: 1", "   :widths: 30 15 15 40", "",
                      "   * - setting", "     - type", "     - default", "     - what it does"]
            for name, trait in traits:
                help_text = " ".join((trait.help or "(no help text)").split())
                lines += [f"   * - ``c.{cls.__name__}.{name}``", f"     - {type(trait).__name__}",
                          f"     - ``{_default(trait)}``", f"     - {help_text}"]
            lines.append("")
        if not lines:
            raise self.error(f"no configurable settings in {self.arguments}")
        node = nodes.section()
        nested_parse_with_titles(self.state, StringList(lines, source="course-settings"), node)
        return node.children


class CoreApi(SphinxDirective):
    """One section per public module of a package, each an ``automodule`` with its members."""

    required_arguments = 1

    def run(self):
        lines = []
        for module in _modules(self.arguments[0]):
            if module.__name__ == self.arguments[0]:
                continue
            name = module.__name__
            lines += [name, "-" * len(name), "", f".. automodule:: {name}", "   :members:", "", ""]
        node = nodes.section()
        nested_parse_with_titles(self.state, StringList(lines, source="core-api"), node)
        return node.children


def resolve_short_name(app, env, node, contnode):
    """A Python reference that names a course object by a short or re-exported name
    (``course.core.allreduce_time``, ``STEP_TERMS`` from another module of the core, ``Lab.parts``)
    links to the documented object whose dotted name ends with it: the one in the current module
    if there is one, else the one on the whole site. A name documented more than once outside the
    current module, or never, stays unresolved (and fails the build: nitpicky, warnings as errors)."""
    if node.get("refdomain") != "py":
        return None
    target = node["reftarget"].lstrip("~.")
    objects = env.get_domain("py").objects
    module = node.get("py:module") or ""
    want_module = node.get("reftype") == "mod"
    tail = target.split(".", 2)[-1] if target.startswith("course.") else target
    candidates = sorted(name for name, entry in objects.items()
                        if (name == tail or name.endswith("." + tail)) and (entry.objtype == "module") == want_module
                        and name.startswith("course."))
    local = [name for name in candidates if module and name.startswith(module + ".")]
    chosen = local if len(local) == 1 else candidates
    if len(chosen) != 1:
        return None
    from sphinx.util.nodes import make_refnode

    entry = objects[chosen[0]]
    return make_refnode(app.builder, node["refdoc"], entry.docname, entry.node_id, contnode, chosen[0])


def source_as_notes(app, what, name, obj, options, lines) -> None:
    """A core docstring's ``Source: ...`` paragraph after its Returns section becomes a Notes
    section, so numpydoc shows it as the source it is, not as one more returned value."""
    if not name.startswith("course.core") or "Notes" in lines:
        return
    for i, line in enumerate(lines):
        if re.match(r"Sources?:\s", line) and i > 0 and not lines[i - 1].strip():
            lines[i:i] = ["Notes", "-----"]
            return


def setup(app):
    app.connect("autodoc-process-docstring", source_as_notes, priority=400)  # before numpydoc's (500)
    app.connect("missing-reference", resolve_short_name)
    app.add_directive("course-settings", CourseSettings)
    app.add_directive("core-api", CoreApi)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
