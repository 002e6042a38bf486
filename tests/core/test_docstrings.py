"""Every public function of the core documents itself the same way (quality bar of the team).

A numpydoc docstring with Parameters (when it takes any) and Returns sections, a
source (paper, table or data sheet) and a runnable example; ``--doctest-modules`` runs
the examples, this test only checks that they exist.
"""

import inspect
import re

import pytest

from course.core import (catalog, checkpointing, collectives, context_parallel, data_parallel, economics, fp8, layer_cost, lr,
                         measurement, memory, moe, moe_capacity, pipeline, planner, precision, reliability, sgd, tensor,
                         zero)

MODULES = (collectives, memory, pipeline, tensor, data_parallel, lr, reliability, precision,
           economics, sgd, catalog, planner, layer_cost, zero, context_parallel, moe, moe_capacity, fp8, checkpointing,
           measurement)

PUBLIC_FUNCTIONS = sorted(
    {(module.__name__.rsplit(".", 1)[1], name): getattr(module, name)
     for module in MODULES for name in module.__all__
     if inspect.isfunction(getattr(module, name))}.items())


@pytest.mark.parametrize("where, function", PUBLIC_FUNCTIONS, ids=lambda x: ".".join(x) if isinstance(x, tuple) else "")
def test_public_function_has_a_complete_docstring(where, function):
    doc = inspect.getdoc(function) or ""
    missing = []
    if inspect.signature(function).parameters and "Parameters\n----------" not in doc:
        missing.append("Parameters section")
    if "Returns\n-------" not in doc:
        missing.append("Returns section")
    if not re.search(r"\bSources?\b", doc):
        missing.append("a Source")
    if ">>> " not in doc:
        missing.append("an example (doctest)")
    assert not missing, f"{'.'.join(where)} lacks {', '.join(missing)}"


def test_the_list_is_not_empty():
    assert len(PUBLIC_FUNCTIONS) > 100
