"""``python3 dev.py setup`` (which ``dev.py test``, ``lab`` and ``hub`` run first) leaves byte code for
the editable packages, so no process has to compile the course from source when it imports it.

pip compiles what it installs into site-packages, but not an editable install; with
``PYTHONDONTWRITEBYTECODE`` set (this machine, the autograder's sandbox) nothing else ever writes it.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _stale_or_missing(package: str) -> list:
    """Modules of ``package`` whose ``__pycache__`` file is missing or does not match the source."""
    found = []
    for source in sorted((ROOT / package).rglob("*.py")):
        cached = Path(importlib.util.cache_from_source(str(source)))
        stat = source.stat()
        if not cached.exists():
            found.append(str(source.relative_to(ROOT)))
            continue
        header = cached.read_bytes()[:16]  # magic, flags, source mtime, source size (PEP 552)
        flags = int.from_bytes(header[4:8], "little")
        if header[:4] != importlib.util.MAGIC_NUMBER or (flags == 0 and (
                int.from_bytes(header[8:12], "little") != int(stat.st_mtime) & 0xFFFFFFFF
                or int.from_bytes(header[12:16], "little") != stat.st_size & 0xFFFFFFFF)):
            found.append(str(source.relative_to(ROOT)))
    return found


def test_setup_leaves_current_byte_code_for_the_editable_packages():
    subprocess.run([sys.executable, str(ROOT / "dev.py"), "setup"], check=True, capture_output=True, cwd=ROOT)
    for package in ("course", "autograder", "hub"):
        assert _stale_or_missing(package) == [], f"{package}: no current byte code after dev.py setup"
