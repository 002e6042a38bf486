"""Keep every instrument test away from the real ~/.course ledger and cwd."""

import pytest


@pytest.fixture(autouse=True)
def _private_ledger_and_cwd(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_LEDGER", str(tmp_path / "ledger.json"))
    monkeypatch.delenv("COURSE_AUTOPREDICT", raising=False)
    monkeypatch.chdir(tmp_path)
    yield
