"""The committed sample incident (sample_logs/) read back with journalctl, checked against its README."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

SAMPLE = Path(__file__).resolve().parents[1] / "sample_logs"
JOURNAL = SAMPLE / "journal"
UNRELATED = ("ssh.service", "cron.service", "(kernel)")

pytestmark = pytest.mark.skipif(shutil.which("journalctl") is None, reason="journalctl not installed")


def journalctl(*args: str) -> str:
    """Run journalctl on the sample journal directory and return its stdout."""
    done = subprocess.run(
        ["journalctl", "--directory", str(JOURNAL), "--no-pager", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def unit_of(entry: dict) -> str:
    """The unit an entry belongs to, ``(kernel)`` for kernel messages (as the README's table names them)."""
    return entry.get("_SYSTEMD_UNIT") or f"({entry.get('_TRANSPORT')})"


def readme_counts() -> dict[str, tuple[int, int | None]]:
    """README "Entries per unit": unit -> (entries with that _SYSTEMD_UNIT, entries `journalctl -u` finds)."""
    rows = re.findall(r"^\| `([^`]+)` \| (\d+) \| (\d+|-) \|$", (SAMPLE / "README.md").read_text(), re.M)
    return {unit: (int(n), None if by_u == "-" else int(by_u)) for unit, n, by_u in rows}


def cursors(export: str) -> int:
    """Number of entries in journalctl ``-o export`` output."""
    return sum(1 for line in export.splitlines() if line.startswith("__CURSOR="))


@pytest.fixture(scope="module")
def entries() -> list[dict]:
    # --all: fields over 4096 bytes (the request log's Finish lines) are null without it
    return [json.loads(line) for line in journalctl("-o", "json", "--all").splitlines()]


def test_journal_dir_is_laid_out_as_var_log_journal():
    dirs = [p for p in JOURNAL.iterdir() if p.is_dir()]
    assert len(dirs) == 1 and re.fullmatch(r"[0-9a-f]{32}", dirs[0].name)
    names = sorted(p.name for p in dirs[0].iterdir())
    assert "system.journal" in names
    assert any(re.fullmatch(r"system@[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{16}\.journal", n) for n in names), (
        names
    )
    journalctl("--verify")


def test_every_entry_reads_back(entries):
    total = sum(n for n, _ in readme_counts().values())
    assert total > 0
    assert cursors(journalctl("-o", "export")) == total == len(entries)
    assert (
        sum(1 for line in (SAMPLE / "journal.export").open() if line.startswith("__REALTIME_TIMESTAMP="))
        == total
    )


def test_entries_per_unit_match_readme(entries):
    assert Counter(unit_of(e) for e in entries) == {unit: n for unit, (n, _) in readme_counts().items()}


def test_journalctl_u_matches_readme():
    for unit, (_, by_u) in readme_counts().items():
        if by_u is not None:
            assert cursors(journalctl("-u", unit, "-o", "export")) == by_u, unit


def test_unrelated_units_are_there(entries):
    seen = Counter(unit_of(e) for e in entries)
    for unit in UNRELATED:
        assert seen[unit] > 0, unit
    kernel = [e for e in entries if e.get("_TRANSPORT") == "kernel"]
    assert kernel and all("_SYSTEMD_UNIT" not in e and "_PID" not in e for e in kernel)
    systemd = [e for e in entries if e.get("_SYSTEMD_UNIT") == "init.scope"]
    assert {e["UNIT"] for e in systemd} == {"sglang-decode.service", "sglang-prefill.service"}
    assert all(e["_PID"] == "1" for e in systemd)


def test_json_capture_has_the_same_entries(entries):
    captured = [json.loads(line) for line in (SAMPLE / "journal.json").open()]
    assert len(captured) == len(entries)
    assert Counter(unit_of(e) for e in captured) == Counter(unit_of(e) for e in entries)
    assert [e["__REALTIME_TIMESTAMP"] for e in captured] == [e["__REALTIME_TIMESTAMP"] for e in entries]


def test_assertion_on_prefill_tp0_tp1_tp3_only(entries):
    room = re.search(r"^\| the room R \| `(\d+)` \|$", (SAMPLE / "README.md").read_text(), re.M).group(1)
    heads = [e for e in entries if e["MESSAGE"].endswith(f"Unexpected transfer worker error for room {room}")]
    assert {e["_SYSTEMD_UNIT"] for e in heads} == {"sglang-prefill.service"}
    assert sorted(re.search(r" TP(\d)\]", e["MESSAGE"]).group(1) for e in heads) == ["0", "1", "3"]
    aborts = [e for e in entries if f"bootstrap_room={room} " in e["MESSAGE"]]
    assert min(int(e["__REALTIME_TIMESTAMP"]) for e in aborts) < min(
        int(e["__REALTIME_TIMESTAMP"]) for e in heads
    )
