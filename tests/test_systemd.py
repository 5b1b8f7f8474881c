"""systemd's messages about a unit (parsers/systemd.py) → lifecycle rows, from the journal and from text."""

from __future__ import annotations

from datetime import UTC, datetime

import polars as pl
import pytest

from logcorr.ingest import ingest, records_from_text
from logcorr.parsers import systemd
from tests.conftest import SAMPLE, ingested, need_journalctl


@pytest.mark.parametrize("m", systemd.UNIT_MESSAGES, ids=[m.event for m in systemd.UNIT_MESSAGES])
def test_every_sample_is_its_own_event_and_no_other(m):
    ev = records_from_text(m.sample)
    assert ev["kind"].to_list() == ["lifecycle"]
    assert systemd.lifecycle(ev)["event"].to_list() == [m.event]


def test_a_crash_loop_from_a_text_capture():
    text = "\n".join(
        [
            "2026-02-22T06:52:37+0000 gpu-3 systemd[1]: sglang-decode.service: Main process exited, code=killed, status=9/KILL",
            "2026-02-22T06:52:37+0000 gpu-3 systemd[1]: sglang-decode.service: Failed with result 'signal'.",
            "2026-02-22T06:52:37+0000 gpu-3 systemd[1]: sglang-decode.service: Consumed 1h 2min 3.5s CPU time, 12.5G memory peak.",
            "2026-02-22T06:52:47+0000 gpu-3 systemd[1]: sglang-decode.service: Scheduled restart job, restart counter is at 3.",
            "2026-02-22T06:52:47+0000 gpu-3 systemd[1]: Started sglang-decode.service - SGLang decode engine.",
            "2026-02-22T06:52:48+0000 gpu-3 python3[4242]: INFO:     Started server process [4242]",
        ]
    )
    lc = systemd.lifecycle(records_from_text(text))
    assert lc["event"].to_list() == [
        "exited", "failed", "consumed", "restart_scheduled", "started", "server_started"
    ]  # fmt: skip
    assert set(lc["unit"][:5]) == {"sglang-decode.service"} and set(lc["host"]) == {"gpu-3"}
    assert lc["message"][5].endswith("Started server process [4242]")  # the engine's own word, not systemd's
    exited = lc.row(0, named=True)
    assert (exited["code"], exited["status"]) == ("killed", "9/KILL")
    assert lc["result"][1] == "signal" and lc["restart_counter"][3] == 3
    assert lc["cpu_s"][2] == pytest.approx(3723.5)
    assert lc["memory_peak_bytes"][2] == int(12.5 * (1 << 30))
    assert lc["ts"][3] == datetime(2026, 2, 22, 6, 52, 47, tzinfo=UTC)


def test_the_sample_restart_is_in_lifecycle():
    need_journalctl()
    lc = pl.read_parquet(ingested(SAMPLE / "journal") / "lifecycle" / "**" / "*.parquet").sort("ts")
    started = lc.filter(pl.col("event") == "started")
    assert started.select("unit", "role").rows() == [
        ("sglang-prefill.service", "prefill"),
        ("sglang-decode.service", "decode"),
    ]
    assert started["ts"][1] == datetime(2025, 10, 29, 21, 40, 46, 455299, tzinfo=UTC)
    assert lc.filter(pl.col("event") == "stopping")["unit"].to_list() == [
        "sglang-decode.service",
        "sglang-prefill.service",
    ]


def test_journalctl_short_of_the_sample_reads_as_the_journal(tmp_path):
    """`journalctl -o short` prints no year, no zone and no unit: the year comes from the lines'
    own dates, the role from what each process's records show (never another role than the journal's)."""
    need_journalctl()
    import subprocess

    short = tmp_path / "short.txt"
    env = {"TZ": "UTC", "PATH": "/usr/bin:/bin", "SYSTEMD_COLORS": "0"}
    with open(short, "w") as f:
        subprocess.run(
            ["journalctl", "--directory", str(SAMPLE / "journal"), "-o", "short", "--no-pager"],
            stdout=f, env=env, check=True,
        )  # fmt: skip
    ingest([short], tmp_path / "s")
    cols = ["ts", "pid", "tp_rank", "kind", "message", "role"]
    j = pl.read_parquet(ingested(SAMPLE / "journal") / "events" / "**" / "*.parquet").select(cols)
    s = pl.read_parquet(tmp_path / "s" / "events" / "**" / "*.parquet").select(cols)
    j, s = (f.with_columns(pl.col("ts").dt.truncate("1s")) for f in (j, s))
    assert s["ts"].dt.year().unique().to_list() == [2025]
    key = ["ts", "pid", "tp_rank", "kind", "message"]
    assert (
        j.join(s, on=key, how="anti", nulls_equal=True).height == 0
    )  # every record, to the second, its rank
    assert s.join(j, on=key, how="semi", nulls_equal=True).height == j.height
    both = j.unique().join(s.unique(), on=key, how="inner", nulls_equal=True, suffix="_short")
    differ = both.filter(pl.col("role") != pl.col("role_short"))
    assert set(differ["role_short"]) <= {"unknown"}  # never another role than the journal's
    engine = both.filter(
        pl.col("kind").is_in(["batch", "transfer_error", "abort", "watchdog", "pyspy", "lifecycle"])
        & ~pl.col("message").str.contains(r"server process \[|Shutting down$")
    )  # systemd's lifecycle lines name their unit; the HTTP server's own may be of no role in short
    assert (engine["role"] == engine["role_short"]).all()
    extra = s.join(j, on=key, how="anti", nulls_equal=True)
    assert set(extra["role"]) == {"unknown"}  # sshd, cron, the kernel: the journal's unit choice skips them
