"""Numbers on the site read from the code, never typed twice.

The role ``value`` renders what a Python expression over the course's names evaluates to, when
the site is built::

    {value}`course.core.DEFAULT_COMPUTE_EFFICIENCY`                     (a MyST page)
    :value:`course.core.plan_terms.REFERENCE_GEMM_EFFICIENCY | .1%`       (a docstring, reST)

After ``|`` comes a format spec (``.2f``, ``.1%``, ``,``; default ``str``). Every dotted name that
starts with ``course.`` is imported as far as it is a module; nothing else is in scope (no
builtins), so the expression can only read the course's constants and do arithmetic on them. A
name that does not exist, or an expression that fails, is a build error (the site builds with
warnings as errors), so a page cannot go on stating a number the code no longer has.
"""

from __future__ import annotations

import ast
import importlib

from docutils import nodes


def _import_prefixes(dotted: str) -> None:
    parts = dotted.split(".")
    for end in range(2, len(parts) + 1):
        try:
            importlib.import_module(".".join(parts[:end]))
        except ImportError:
            break


def code_value(text: str) -> str:
    """The value of ``EXPRESSION [| FORMAT]``, formatted.

    >>> code_value("course.core.plan_terms.REFERENCE_GEMM_EFFICIENCY | .1%")
    '86.9%'
    """
    expression, _, spec = text.partition("|")
    tree = ast.parse(expression.strip(), mode="eval")
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id != "course":
            raise NameError(f"{node.id!r}: only names under course. can be read")
        if isinstance(node, ast.Attribute):
            _import_prefixes(ast.unparse(node))
    import course

    value = eval(compile(tree, "<value role>", "eval"), {"__builtins__": {}}, {"course": course})
    return format(value, spec.strip()) if spec.strip() else str(value)


def value_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    try:
        shown = code_value(text)
    except Exception as exc:  # noqa: BLE001 -- any failure is reported at the reference, as a build error
        message = inliner.reporter.error(f"value role: {text!r} does not evaluate: {type(exc).__name__}: {exc}",
                                         line=lineno)
        problem = inliner.problematic(rawtext, rawtext, message)
        return [problem], [message]
    return [nodes.inline(rawtext, shown, classes=["course-value"])], []


def setup(app):
    app.add_role("value", value_role)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
