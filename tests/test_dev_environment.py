"""The environment is the lock: ``requirements.lock`` pins every package ``.venv`` holds, covers every
top-level pin of ``requirements.txt``, and ``dev.py`` notices any difference (CI runs ``dev.py setup``).
"""

from __future__ import annotations

import importlib.util
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


def test_the_lock_holds_every_top_level_pin_and_only_exact_pins():
    dev = _dev()
    assert dev.stale_lock() == []
    text = dev.LOCK.read_text()
    assert "://" not in text and "--index" not in text and "--extra-index" not in text  # never a registry
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert lines == sorted(lines, key=lambda line: line.split("==")[0])
    assert all(re.fullmatch(r"[a-z0-9-]+==\S+", line) for line in lines)
    names = {line.split("==")[0] for line in lines}
    assert not names & set(dev.UNUSED) and not names & set(dev.INSTALLER) and dev.PROJECT not in names
    # the runtime dependencies of pyproject.toml are pinned at the same version
    pyproject = (ROOT / "pyproject.toml").read_text()
    for name, version in re.findall(r'^\s+"([A-Za-z0-9_.-]+)==([^"]+)",$', pyproject, re.M):
        assert dev.read_pins(dev.LOCK)[dev.canonical(name)] == version


def test_a_stale_lock_and_a_drifted_environment_are_reported(tmp_path, monkeypatch):
    dev = _dev()
    requirements, lock = tmp_path / "requirements.txt", tmp_path / "requirements.lock"
    requirements.write_text("numpy==2.4.6\nnbgrader==9.9.9  # a bump not locked yet\n")
    lock.write_text("# header\nnbgrader==0.9.6\nnumpy==2.4.6\ntornado==6.6.1\n")
    monkeypatch.setattr(dev, "REQUIREMENTS", requirements)
    monkeypatch.setattr(dev, "LOCK", lock)
    assert dev.stale_lock() == ["requirements.txt pins nbgrader==9.9.9, requirements.lock has 0.9.6"]
    with pytest.raises(SystemExit, match="run `python3 dev.py lock`"):
        dev.install_locked()
    present = {"numpy": "2.4.6", "tornado": "6.5.0", "rfc3987-syntax": "1.1.0", "pip": "23.2.1",
               dev.PROJECT: "0.1.0"}
    monkeypatch.setattr(dev, "installed", lambda python: dict(present))
    problems = dev.lock_problems(Path(sys.executable))
    assert problems[:3] == ["nbgrader==0.9.6 is locked but not installed", "tornado is 6.5.0, locked at 6.6.1",
                            "rfc3987-syntax==1.1.0 is installed but not locked"]


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
