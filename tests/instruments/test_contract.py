"""Every instrument in course.instruments honours the pattern of base.py (found automatically)."""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil

import bqplot as bq
import pytest

import course.instruments as package
from course.instruments.base import Instrument

from .helpers import assert_alive


def _instrument_classes():
    found = []
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        found += [cls for _n, cls in inspect.getmembers(module, inspect.isclass)
                  if issubclass(cls, Instrument) and cls is not Instrument and cls.__module__ == module.__name__]
    return sorted(found, key=lambda c: c.__name__)


CLASSES = _instrument_classes()


def test_public_names_resolve():
    for name in package.__all__:
        assert getattr(package, name) is not None
    exported = {getattr(package, n) for n in package.__all__}
    assert set(CLASSES) <= exported, "every instrument is exported from course.instruments"


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_instrument_contract(cls):
    inst = cls()
    assert cls.title != Instrument.title, "set a title"
    assert inst.controls and inst.figures
    assert all(isinstance(f, bq.Figure) and f.marks for f in inst.figures)
    assert_alive(inst)
    assert inst.result, "refresh() returns the numbers it shows"
    json.dumps(inst.ledger_entry())
    assert "application/vnd.jupyter.widget-view+json" in inst._repr_mimebundle_()
    inst.set_gated(True)
    assert inst.gated and all(getattr(c, "disabled", True) for c in inst.controls.values())
    inst.set_gated(False)
    assert not inst.gated
