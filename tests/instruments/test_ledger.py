"""Design ledger: merge updates, atomicity, corruption handling, concurrent writers."""

from __future__ import annotations

import doctest
import json
import os
import multiprocessing as mp
import warnings

import pytest

import course.ledger
from course.ledger import Ledger, LedgerCorruptWarning, default_ledger_path


def test_doctests():
    failures, _ = doctest.testmod(course.ledger)
    assert failures == 0


def test_record_merges_fields_and_stamps_times(tmp_path):
    ledger = Ledger(tmp_path / "l.json")
    assert ledger.get("lab05/act1") is None
    ledger.record("lab05/act1", {"prediction": "B", "decisions": ["tp=8"]})
    ledger.record("lab05/act1", {"correct": False, "decisions": ["tp=8", "pp=4"]})
    entry = ledger.get("lab05/act1")
    assert entry["prediction"] == "B"
    assert entry["correct"] is False
    assert entry["decisions"] == ["tp=8", "pp=4"]
    assert entry["created"] <= entry["updated"]
    # the file on disk is plain JSON that another tool can read
    assert json.loads((tmp_path / "l.json").read_text())["lab05/act1"]["prediction"] == "B"


def test_entries_is_a_copy(tmp_path):
    ledger = Ledger(tmp_path / "l.json")
    ledger.record("ch00/ex0_1", {"attempts": 1})
    ledger.entries()["ch00/ex0_1"]["attempts"] = 99
    assert ledger.get("ch00/ex0_1")["attempts"] == 1


def test_default_path_follows_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_LEDGER", str(tmp_path / "x" / "ledger.json"))
    assert default_ledger_path() == tmp_path / "x" / "ledger.json"
    assert Ledger().path == tmp_path / "x" / "ledger.json"
    monkeypatch.delenv("COURSE_LEDGER")
    assert default_ledger_path().parts[-2:] == (".course", "ledger.json")


@pytest.mark.parametrize("key", ["", "   ", None, 3])
def test_bad_key_raises(tmp_path, key):
    with pytest.raises(ValueError, match="key"):
        Ledger(tmp_path / "l.json").record(key, {"a": 1})


def test_bad_entry_raises_and_leaves_file_alone(tmp_path):
    ledger = Ledger(tmp_path / "l.json")
    ledger.record("k", {"a": 1})
    with pytest.raises(ValueError, match="entry"):
        ledger.record("k", ["not", "a", "dict"])
    with pytest.raises(TypeError):
        ledger.record("k", {"f": object()})
    assert ledger.get("k")["a"] == 1


def test_numpy_values_are_stored_as_plain_json(tmp_path):
    np = pytest.importorskip("numpy")
    ledger = Ledger(tmp_path / "l.json")
    ledger.record("k", {"x": np.float64(1.5), "v": np.arange(3)})
    assert ledger.get("k")["x"] == 1.5 and ledger.get("k")["v"] == [0, 1, 2]


@pytest.mark.parametrize("garbage", ["{not json", "[1, 2, 3]", '{"k": 5}', "\x00\x01"])
def test_corrupt_file_is_backed_up_with_a_warning(tmp_path, garbage):
    path = tmp_path / "l.json"
    path.write_text(garbage)
    ledger = Ledger(path)
    with pytest.warns(LedgerCorruptWarning, match="moved to"):
        assert ledger.entries() == {}
    backups = list(tmp_path.glob("l.json.corrupt-*"))
    assert len(backups) == 1 and backups[0].read_text() == garbage
    # the ledger works again afterwards, and warns no more
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ledger.record("k", {"a": 1})
        assert ledger.get("k")["a"] == 1


def test_empty_file_is_an_empty_ledger(tmp_path):
    path = tmp_path / "l.json"
    path.write_text("")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert Ledger(path).entries() == {}


def test_no_temp_files_left_behind(tmp_path):
    ledger = Ledger(tmp_path / "l.json")
    for i in range(5):
        ledger.record(f"k{i}", {"i": i})
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


def _writer(path: str, worker: int, count: int) -> None:
    ledger = Ledger(path)
    for i in range(count):
        ledger.record(f"w{worker}/e{i}", {"worker": worker, "i": i})
        ledger.record("shared", {f"w{worker}": i})
        ledger.update("counter", lambda e: {"n": e.get("n", 0) + 1})


def test_concurrent_writers_lose_nothing(tmp_path):
    path = str(tmp_path / "l.json")
    workers, count = 8, 15
    ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context()
    procs = [ctx.Process(target=_writer, args=(path, w, count)) for w in range(workers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    entries = Ledger(path).entries()
    assert len(entries) == workers * count + 2
    assert entries["counter"]["n"] == workers * count  # atomic increments: none lost
    for w in range(workers):
        for i in range(count):
            assert entries[f"w{w}/e{i}"] == {**entries[f"w{w}/e{i}"], "worker": w, "i": i}
        # the merged shared entry holds every worker's last value
        assert entries["shared"][f"w{w}"] == count - 1


def test_reading_needs_no_writable_folder(tmp_path):
    missing = Ledger(tmp_path / "not-yet" / "ledger.json")
    assert missing.entries() == {} and not (tmp_path / "not-yet").exists()
    folder = tmp_path / "ro"
    folder.mkdir()
    Ledger(folder / "l.json").record("k", {"a": 1})
    (folder / ".l.json.lock").unlink()
    folder.chmod(0o555)
    try:
        if os.access(folder, os.W_OK):  # root ignores permissions: nothing to check here
            pytest.skip("running as root: a read-only folder is still writable")
        assert Ledger(folder / "l.json").get("k")["a"] == 1
    finally:
        folder.chmod(0o755)


def test_update_merges_what_the_function_returns(tmp_path):
    ledger = Ledger(tmp_path / "l.json")
    ledger.record("k", {"a": 1, "n": 2})
    stored = ledger.update("k", lambda e: {"n": e["n"] * 10})
    assert stored["a"] == 1 and stored["n"] == 20 and ledger.get("k")["n"] == 20
    with pytest.raises(ValueError, match="change must return a dict"):
        ledger.update("k", lambda e: 5)
