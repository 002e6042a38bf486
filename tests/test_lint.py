"""ruff is clean with the rules of pyproject.toml, and every ``# noqa`` names its rule and says why."""

from __future__ import annotations

import re
import subprocess
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: ``# noqa: E402 -- why`` (or ``- why``, ``(why)``): codes, then a reason
EXPLAINED = re.compile(r"# noqa: [A-Z]+[0-9]+(,[A-Z]+[0-9]+)*\b *(--? |\(|— )\S")


def test_ruff_is_clean():
    ruff = Path(sys.executable).parent / "ruff"
    proc = subprocess.run([str(ruff), "check", "--no-cache", "--output-format", "concise", "."],
                          cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


def _comments(path: Path):
    """(line number, comment) of every comment in ``path`` (a ``# noqa`` inside a string is no comment)."""
    with path.open("rb") as source:
        for token in tokenize.tokenize(source.readline):
            if token.type == tokenize.COMMENT:
                yield token.start[0], token.string


def test_every_noqa_names_its_rule_and_a_reason():
    files = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.split()
    bare = [f"{name}:{number}: {comment}"
            for name in files if (ROOT / name).is_file()
            for number, comment in _comments(ROOT / name)
            if "# noqa" in comment and not EXPLAINED.search(comment)]
    assert bare == [], "a # noqa without its rule and a reason:\n" + "\n".join(bare)
