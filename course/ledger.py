"""The design ledger: one JSON file that remembers what a student did.

Every lab act and workbook exercise records one keyed entry ("lab05/act1",
"lab06/act2", "ch00/ex0_1"...): the prediction, whether it was correct, the
decisions taken, the failure states hit, the final configuration, timestamps.
The index notebook reads the ledger back to show progress and mastery
(:mod:`course.progress`).

Guarantees
----------
* **Atomic**: a write goes to a temporary file in the same folder, is fsynced,
  then ``os.replace``-d over the ledger, so a crash leaves either the old or
  the new file, never half of one.
* **No lost updates**: every read-modify-write holds an exclusive
  ``fcntl.flock`` on a hidden sidecar ``.<ledger>.lock`` file, so two notebooks (two
  kernels, two processes) recording at the same moment both keep their entry.
* **Nothing silently lost**: a file that is not a JSON object of objects is
  moved aside to ``<ledger>.corrupt-<UTC timestamp>`` with a warning naming
  the backup, and the ledger starts clean.

Example
-------
>>> import tempfile, os
>>> ledger = Ledger(os.path.join(tempfile.mkdtemp(), "ledger.json"))
>>> ledger.record("lab06/act1", {"prediction": "C"})
>>> ledger.record("lab06/act1", {"correct": True})
>>> entry = ledger.get("lab06/act1")
>>> entry["prediction"], entry["correct"]
('C', True)
>>> sorted(ledger.entries())
['lab06/act1']
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import tempfile
import warnings
import weakref
from pathlib import Path
from typing import Any, Callable, Iterator

try:  # POSIX; on Windows the lock degrades to a no-op (single-user laptops)
    import fcntl
except ImportError:  # pragma: no cover - exercised only on Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["Ledger", "LedgerCorruptWarning", "default_ledger_path", "atomic_write_json"]

ENV_VAR = "COURSE_LEDGER"


class LedgerCorruptWarning(UserWarning):
    """A ledger file could not be read; it was moved aside and a clean one started."""


def default_ledger_path() -> Path:
    """``$COURSE_LEDGER`` if set, else ``~/.course/ledger.json``."""
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env).expanduser()
    return Path.home() / ".course" / "ledger.json"


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def atomic_write_json(path: Path, data: Any) -> None:
    """Write ``data`` as JSON to ``path`` atomically (temp file, fsync, replace)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=1, sort_keys=True, default=_json_default)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    # fsync the folder so the rename itself survives a power cut
    with contextlib.suppress(OSError):
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def _json_default(value: Any) -> Any:
    """Make NumPy scalars/arrays and sets JSON-able instead of failing mid-write."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    raise TypeError(f"ledger entries must be JSON-able; got {type(value).__name__}")


class Ledger:
    """A keyed, merge-updated, concurrency-safe JSON store of design decisions.

    Parameters
    ----------
    path : str or Path, optional
        Ledger file. Default: environment variable ``COURSE_LEDGER``, else
        ``~/.course/ledger.json``. The folder is created on first write.
    """

    def __init__(self, path: str | os.PathLike | None = None):
        self.path = Path(path).expanduser() if path is not None else default_ledger_path()
        # hidden: for predictions.json it sits in the student's assignment folder, next to the notebook
        self.lock_path = self.path.with_name("." + self.path.name + ".lock")

    def __repr__(self) -> str:
        return f"Ledger({str(self.path)!r})"

    # -- change notification (in this process) -------------------------------
    #: weak references to bound methods called after this process writes a ledger file, by path
    _listeners: dict[Path, list] = {}

    def on_write(self, callback: Callable[[], Any]) -> None:
        """Call the bound method ``callback()`` after any ``Ledger`` of this process writes this
        file (a lock locked, an attempt counted), so a display of the ledger refreshes itself.
        Held weakly: a display that is garbage-collected stops being called."""
        Ledger._listeners.setdefault(self.path, []).append(weakref.WeakMethod(callback))

    def _written(self) -> None:
        alive = []
        for ref in Ledger._listeners.get(self.path, []):
            callback = ref()
            if callback is not None:
                alive.append(ref)
                try:
                    callback()
                except Exception:  # noqa: BLE001 (a display's failure must not fail the write)
                    pass
        if self.path in Ledger._listeners:
            Ledger._listeners[self.path] = alive

    # -- locking and raw I/O ------------------------------------------------
    @contextlib.contextmanager
    def _locked(self, for_reading: bool = False) -> Iterator[None]:
        if for_reading and not os.access(self.path.parent, os.W_OK):
            # Nothing to read yet, or a read-only home (a grading sandbox): read without a lock file.
            yield
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.lock_path, "a+") as lock_file:
            if fcntl is not None:
                fcntl.flock(lock_file.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                if fcntl is not None:
                    fcntl.flock(lock_file.fileno(), fcntl.LOCK_UN)

    def _read_unlocked(self) -> dict[str, dict]:
        """Read the file; call with the lock held (it may move a corrupt file aside)."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        try:
            data = json.loads(text) if text.strip() else {}
            if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
                raise ValueError("top level must be an object mapping keys to objects")
        except ValueError as exc:  # json.JSONDecodeError is a ValueError
            self._quarantine(exc)
            return {}
        return data

    def _quarantine(self, reason: Exception) -> Path | None:
        stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
        backup = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        try:
            os.replace(self.path, backup)
        except OSError:  # read-only folder: leave the file alone, read it as empty
            warnings.warn(f"The design ledger {self.path} could not be read ({reason}) and could not be "
                          "moved aside (read-only folder); it is treated as empty.", LedgerCorruptWarning,
                          stacklevel=4)
            return None
        warnings.warn(
            f"The design ledger {self.path} could not be read ({reason}). It was moved to "
            f"{backup} so nothing is lost, and a new, empty ledger was started. "
            "Ask your instructor if you need the old entries restored.",
            LedgerCorruptWarning,
            stacklevel=4,
        )
        return backup

    # -- public API ---------------------------------------------------------
    def record(self, key: str, entry: dict) -> None:
        """Merge ``entry`` into the entry stored under ``key`` (atomic, locked).

        Top-level fields of ``entry`` replace the stored ones; fields not named
        are kept. ``created`` is set on first record, ``updated`` on every one.

        Raises
        ------
        ValueError
            If ``key`` is not a non-empty string or ``entry`` is not a dict.
        """
        if not isinstance(key, str) or not key.strip():
            raise ValueError(f"key must be a non-empty string like 'lab05/act1', got {key!r}")
        if not isinstance(entry, dict):
            raise ValueError(f"entry must be a dict, got {type(entry).__name__}")
        # Fail before touching the file if the entry cannot be stored.
        json.dumps(entry, default=_json_default)
        with self._locked():
            data = self._read_unlocked()
            merged = dict(data.get(key, {}))
            merged.update(entry)
            stamp = _now()
            merged.setdefault("created", stamp)
            merged["updated"] = stamp
            data[key] = merged
            atomic_write_json(self.path, data)
        self._written()

    def update(self, key: str, change: Callable[[dict], dict]) -> dict:
        """Atomic read-modify-write of one entry: ``change(old_entry) -> fields to merge``.

        Use it for counters, which ``get`` followed by ``record`` could lose
        when two kernels write at once::

            ledger.update("ch00/ex0_1", lambda e: {"attempts": e.get("attempts", 0) + 1})

        Returns the stored entry.
        """
        if not isinstance(key, str) or not key.strip():
            raise ValueError(f"key must be a non-empty string like 'lab05/act1', got {key!r}")
        with self._locked():
            data = self._read_unlocked()
            old = dict(data.get(key, {}))
            fields = change(dict(old))
            if not isinstance(fields, dict):
                raise ValueError(f"change must return a dict of fields, got {type(fields).__name__}")
            json.dumps(fields, default=_json_default)
            stamp = _now()
            merged = {**old, **fields, "updated": stamp}
            merged.setdefault("created", stamp)
            data[key] = merged
            atomic_write_json(self.path, data)
        self._written()
        return merged

    def record_once(self, key: str, entry: dict) -> dict:
        """Store ``entry`` under ``key`` only if the key is absent; return what is stored.

        First writer wins, atomically: used for prediction locks, which must
        never change once written, even when two kernels lock at once.
        """
        if not isinstance(key, str) or not key.strip():
            raise ValueError(f"key must be a non-empty string like 'lab05/act1', got {key!r}")
        if not isinstance(entry, dict):
            raise ValueError(f"entry must be a dict, got {type(entry).__name__}")
        json.dumps(entry, default=_json_default)
        with self._locked():
            data = self._read_unlocked()
            if key in data:
                return data[key]
            stamp = _now()
            data[key] = {**entry, "created": stamp, "updated": stamp}
            atomic_write_json(self.path, data)
        self._written()
        return data[key]

    def get(self, key: str) -> dict | None:
        """The entry stored under ``key``, or ``None``."""
        return self.entries().get(key)

    def entries(self) -> dict[str, dict]:
        """All entries, as a fresh dict (mutating it does not touch the file)."""
        with self._locked(for_reading=True):
            return self._read_unlocked()

    def clear(self, key: str) -> None:
        """Remove one entry (instructor/test helper)."""
        with self._locked():
            data = self._read_unlocked()
            if data.pop(key, None) is not None:
                atomic_write_json(self.path, data)
