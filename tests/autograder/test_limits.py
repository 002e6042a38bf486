"""The grading limits are declared once (autograder.isolation.limits.GradingLimits) and every engine reads that declaration:
the command line (over nbgrader_config.py), the formgrader, the Gradescope bundle and the sandbox."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from traitlets.config import Config

from autograder.engines import gradescope
from autograder.isolation import sandbox
from autograder.engines.cli import build_parser
from autograder.engines.formgrader import SandboxedAutograde
from autograder.isolation.limits import GradingLimits
from autograder.engines.options import limits

ROOT = Path(__file__).resolve().parents[2]
NAMES = ("cell_timeout", "timeout", "memory_mb", "max_processes", "scratch_mb")


def test_each_limit_is_declared_once():
    """No other module declares a limit (a trait, a flag, a default): each name is a trait of GradingLimits only,
    and no source spells a limit's flag (the flags are made from the names)."""
    assert sorted(GradingLimits.names()) == sorted(NAMES)
    for path in sorted((ROOT / "autograder").rglob("*.py")):
        text = path.read_text()
        for name in NAMES:
            assert f'"{GradingLimits.flag(name)}"' not in text, (path, name)
        if path.name == "limits.py":
            continue
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) \
                    and getattr(node.value.func, "id", "") == "Integer":
                assert not {t.id for t in node.targets if isinstance(t, ast.Name)} & set(NAMES), path


def test_the_sandbox_defaults_are_the_declared_ones():
    declared, fixed = sandbox.Limits.of(GradingLimits()), sandbox.Limits()
    assert (declared.cell_timeout, declared.submission_timeout, declared.memory_bytes, declared.processes,
            declared.scratch_bytes) == (fixed.cell_timeout, fixed.submission_timeout, fixed.memory_bytes,
                                        fixed.processes, fixed.scratch_bytes)
    assert (fixed.cell_timeout, fixed.memory_bytes, fixed.scratch_bytes) == (60, 4096 * 2**20, 512 * 2**20)


@pytest.fixture
def course(tmp_path):
    (tmp_path / "nbgrader_config.py").write_text(
        "c = get_config()\nc.GradingLimits.cell_timeout = 7\nc.SandboxedAutograde.memory_mb = 100\n")
    return tmp_path


def test_the_command_line_reads_nbgrader_config_and_its_flags_win(course):
    parser = build_parser()
    args = parser.parse_args(["class", "ch00", "submitted", "--course-root", str(course)])
    got = limits(args)
    assert got.cell_timeout == 7 and got.memory_bytes == 100 * 2**20 and got.submission_timeout == 300
    args = parser.parse_args(["single", "nb.ipynb", "--course-root", str(course), "--cell-timeout", "9",
                              "--timeout", "40", "--max-processes", "12", "--scratch-mb", "64"])
    got = limits(args)
    assert (got.cell_timeout, got.submission_timeout, got.processes, got.scratch_bytes, got.cpu_seconds) == (
        9, 40, 12, 64 * 2**20, 40)
    bad = parser.parse_args(["class", "ch00", "submitted", "--course-root", str(course), "--memory-mb", "0"])
    with pytest.raises(ValueError, match="--memory-mb"):
        limits(bad)


def test_the_gradescope_bundle_takes_the_same_limits(course):
    args = build_parser().parse_args(["gradescope", "ch00", "--course-root", str(course), "--timeout", "50"])
    settings = gradescope.bundle_settings("ch00", limits(args), None, "email", True, [])
    assert settings["limits"]["cell_timeout"] == 7 and settings["limits"]["submission_timeout"] == 50
    assert sandbox.Limits(**settings["limits"]) == limits(args)


def test_the_formgrader_reads_both_config_names():
    config = Config()
    config.GradingLimits.cell_timeout = 11
    config.GradingLimits.timeout = 30
    config.SandboxedAutograde.timeout = 22  # the older, more specific name wins, as traitlets does
    got = sandbox.Limits.of(SandboxedAutograde(config=config))
    assert (got.cell_timeout, got.submission_timeout, got.memory_bytes) == (11, 22, 4096 * 2**20)
