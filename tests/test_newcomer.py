"""What a newcomer met in the first hour (issue 20): each reproduced, each fix asserted."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from logcorr.analysis.saved import query, run_query
from logcorr.cli import app
from logcorr.ingest import ingest
from logcorr.inputs.source import ReadOptions
from tests.conftest import SAMPLE, need_journalctl, sample_with_dumps

run = CliRunner().invoke


@pytest.fixture(scope="module")
def sample() -> Path:
    return sample_with_dumps()  # shared: read only


def test_version_short_help_and_plain_flags():
    assert run(app, ["--version"]).output.startswith("logcorr ")
    help_text = run(app, ["ingest", "-h"]).output
    assert "--all-units " in help_text and "<bool>" not in help_text
    assert "ISO 8601, UTC unless it carries an offset, for every input" in " ".join(help_text.split())
    assert "Passed to journalctl" not in help_text
    bad = run(app, ["ingest", "x.log", "--role", "a=boss"])
    assert bad.exit_code == 1 and "engine" in bad.output  # a bad option value: 1, as ingest --help says


def test_the_folder_option_is_the_same_word_everywhere(tmp_path):
    log = tmp_path / "a.log"
    log.write_text("[2025-10-29 21:25:00 TP0] Prefill batch, #new-seq: 1, #new-token: 5, #prealloc-req: 0\n")
    assert run(app, ["ingest", str(log), "-d", str(tmp_path / "o")]).exit_code == 0
    assert (tmp_path / "o" / "events").is_dir()
    wrong = run(app, ["report", "-o", str(tmp_path / "o")])
    assert wrong.exit_code == 1 and "-d names the ingest output folder" in wrong.output


def test_a_bare_dump_captured_outside_the_window_is_left_out(tmp_path):
    need_journalctl()
    dumps = sorted((SAMPLE / "pyspy").glob("*_214010.txt"))
    out = tmp_path / "w"
    window = ReadOptions(since="2025-10-29 21:30", until="2025-10-29 21:35")
    result = ingest([SAMPLE / "journal", *dumps], out, window, captured_at="2025-10-29 21:40:10")
    assert pl.read_parquet(out / "captures" / "**" / "*.parquet").height == 0
    dump_reports = [r for r in result.reports if r.format == "pyspy"]
    assert len(dump_reports) == 8 and all(r.records == 0 for r in dump_reports)
    assert all("outside --since/--until" in " ".join(r.notes) for r in dump_reports)
    assert not any("--captured-at not used" in n for n in result.notes)  # it was used: it placed them


def test_garbage_in_is_said_plainly(tmp_path):
    log = tmp_path / "syslog"
    log.write_text("hello world\nsome random syslog line\n")
    result = ingest([log], tmp_path / "g")
    assert any("nothing SGLang-, router- or py-spy-like was found" in n for n in result.notes)


def test_show_prints_a_record_with_its_neighbours(sample):
    eid = query(
        sample,
        "SELECT event_id FROM transfer_errors WHERE error_kind = 'assert_transfer_infos' ORDER BY ts LIMIT 1",
    )
    result = run(app, ["show", str(eid.item()), "-d", str(sample), "-C", "1"])
    assert result.exit_code == 0
    marked = [line for line in result.output.splitlines() if line.startswith(">")]
    assert (
        "TP0" in marked[0]
        and "pid 3307" in marked[0]
        and "(" + str(SAMPLE / "journal") + ":entry i=" in marked[0]
    )
    assert any("assert room in self.transfer_infos" in line for line in marked)
    assert len([line for line in result.output.splitlines() if line.startswith("  2025-")]) == 2
    assert "journalctl --directory" in result.output and "--cursor 's=" in result.output
    assert run(app, ["show", "42", "-d", str(sample)]).exit_code == 1
    # issue 30 item 8: -n meant --context here and --limit in query; the old spelling still works, said
    old = run(app, ["show", str(eid.item()), "-d", str(sample), "-n", "1"])
    assert old.exit_code == 0 and "-n is now -C (--context" in old.stderr
    assert [x for x in old.stdout.splitlines() if x.startswith(">")] == marked


def test_query_limit_columns_and_vertical(sample):
    text = run_query(sample, "wedge", fmt="table", columns=["role", "verdict"], limit=1)
    assert (
        text.splitlines()[0].split() == ["role", "verdict"] and "(1 more row(s) not shown: --limit 1)" in text
    )
    vertical = run_query(sample, "wedge", fmt="vertical", limit=1)
    assert vertical.startswith("-[ row 1 ]") and "ranks_stopped         | 4" in vertical
    assert run_query(sample, "wedge", fmt="table", width=60).startswith(
        "-[ row 1 ]"
    )  # wider than the terminal


def test_requests_in_flight_when_decode_wedged(sample):
    rows = query(sample, "requests_in_flight")
    assert rows["at"].unique().to_list() == [datetime(2025, 10, 29, 21, 34, 47, 414741, tzinfo=UTC)]
    failed = rows.filter(pl.col("outcome") == "failed")
    assert failed.height == 22  # the 22 requests decode was running when it stopped
    assert set(failed["status"]) == {502} and set(failed["engine"]) == {"http://127.0.0.1:30001"}
    assert rows.filter(pl.col("outcome") == "no end in the data").height == 30  # the aborted ones


def test_aborts_name_the_room_their_rid_is_paired_with(sample):
    ab = query(
        sample,
        "SELECT abort_kind, count(*) AS n, count(bootstrap_room) AS with_room FROM aborts GROUP BY ALL ORDER BY 1",
    )
    assert ab.rows() == [("client_disconnected", 60, 60), ("transfer_aborted", 240, 240)]
    bs = query(sample, "SELECT sec, sec_ts FROM batch_seconds ORDER BY sec LIMIT 1").row(0)
    assert bs[1] == datetime.fromtimestamp(bs[0], UTC)


def test_the_chain_is_in_time_order_and_counts_requests_first(sample):
    chain = query(sample, "incident_chain")
    ts = [t for t in chain["ts"] if t is not None]
    assert ts == sorted(ts)
    burst = chain.filter(pl.col("step") == "abort_burst")["detail"][0]
    assert burst.startswith("30 requests (bootstrap rooms) aborted in 6.693 s (60 rids")


def test_an_engine_with_nothing_to_do_is_idle_not_stalled(tmp_path):
    t0 = datetime(2026, 3, 1, 10, 0, 0)
    lines = []
    for i in range(30):  # decode keeps going for 30 s; prefill stops after 5 s with nothing running or queued
        t = t0 + timedelta(seconds=i)
        lines.append(
            f"[{t:%Y-%m-%d %H:%M:%S} TP0] Decode batch, #running-req: 2, #token: 9, #prealloc-req: 0, #transfer-req: 0, #queue-req: 0"
        )
        if i < 5:
            lines.append(
                f"[{t:%Y-%m-%d %H:%M:%S} TP0] Prefill batch, #new-seq: 1, #new-token: 3, #running-req: 0, #queue-req: 0, #prealloc-req: 0"
            )
    log = tmp_path / "x.log"
    log.write_text("\n".join(lines) + "\n")
    ingest([log], tmp_path / "o")
    wedge = query(tmp_path / "o", "wedge", {"min_gap_s": "3"})
    prefill = wedge.filter(pl.col("role") == "prefill")
    assert prefill["verdict"].to_list() == [
        "idle: prefill had no running and no queued request at its last batch lines"
    ]


def test_a_copied_out_needs_no_re_pointing(sample, tmp_path):
    """Issue 49: the file of views reads OUT's tables by paths relative to OUT, so a copy's file reads the
    copy's tables (before, by absolute path: the original's, until query or report re-pointed it)."""
    import shutil

    from logcorr.analysis import database

    views = tmp_path / "views"
    shutil.copytree(sample, views)
    database.write(views, embed=False)
    copy = tmp_path / "copy"
    shutil.copytree(views, copy)
    assert database.points_elsewhere(copy) is None
    result = run(app, ["query", "SELECT count(*) AS n FROM events", "-d", str(copy), "-f", "csv"])
    assert result.exit_code == 0 and "re-pointed" not in result.output
    assert result.output.splitlines()[-1] == "5972"  # the sample journal's 5,964 records and 8 dumps


def test_the_folder_travels_its_duckdb_file_opens_from_anywhere_after_the_original_is_gone(tmp_path):
    """Issue 30 item 6, the README's recipe: ingest, ``cp -r OUT elsewhere``, remove OUT, then DuckDB's
    own client opens the copy's file as the README says (a fresh process, ``cd incident && duckdb
    logcorr.duckdb``; issue 49: views over the copy's Parquet files): every table and view."""
    import json
    import shutil
    import subprocess
    import sys

    need_journalctl()
    out = tmp_path / "incident"
    result = run(app, ["ingest", str(SAMPLE / "journal"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    rows = json.loads((out / "manifest.json").read_text())["rows"]
    shutil.copytree(out, tmp_path / "anywhere" / "incident")
    shutil.rmtree(out)
    code = (
        "import duckdb, sys\n"
        "con = duckdb.connect(sys.argv[1], read_only=True)\n"
        "con.execute('SET enable_progress_bar = false')\n"  # a slow view (load) would print one on stdout
        "names = [r[0] for r in con.sql('SELECT table_name FROM information_schema.tables').fetchall()]\n"
        "for n in sorted(names):\n"
        "    print(n, con.sql(f'SELECT count(*) FROM \"{n}\"').fetchall()[0][0])\n"
    )
    db = tmp_path / "anywhere" / "incident" / "logcorr.duckdb"
    proc = subprocess.run(
        [sys.executable, "-c", code, db.name], cwd=db.parent, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    counts = dict(line.rsplit(" ", 1) for line in proc.stdout.splitlines())
    assert {t: int(counts[t]) for t in rows} == rows  # every table whole
    assert rows["events"] == 5964 and rows["aborts"] == 300  # the sample journal's records
    assert int(counts["abort_to_assert"]) > 0 and "wedge" in counts and "findings" in counts
    assert len(counts) >= 35  # 17 tables, the derived views and every saved query


def test_a_time_without_a_date_is_on_the_data_s_first_day_in_every_command_or_refused(tmp_path):
    """Issue 30 item 5: ``--since 21:34`` on a journal meant today to journalctl ("no entries"), was
    refused on an export and meant the data's first day to ``timeline``: one rule now, said."""
    need_journalctl()
    out = tmp_path / "out"
    got = run(
        app, ["ingest", str(SAMPLE / "journal"), "--since", "21:34", "--until", "21:35", "-o", str(out)]
    )
    assert got.exit_code == 0, got.output
    assert "--since '21:34' read as 2025-10-29 21:34 UTC, on the data's first day" in got.output
    assert "time span: 2025-10-29 21:34:00 .. 2025-10-29 21:34:57 (UTC)" in got.output
    refused = run(
        app, ["ingest", str(SAMPLE / "journal.export"), "--since", "21:34", "-o", str(tmp_path / "x")]
    )
    assert refused.exit_code == 1 and "a time of day needs a date" in refused.output
    assert "give the date too ('2025-10-29 21:30')" in refused.output and not (tmp_path / "x").exists()
    shown = run(app, ["timeline", "-d", str(out), "--since", "21:34:40", "-o", str(tmp_path / "t.html")])
    assert shown.exit_code == 0, shown.output


def test_a_parameter_named_as_a_reserved_word_is_bound_and_json_stays_json(sample):
    """Issue 30.3: ``-p at=…`` (AT is reserved in DuckDB's SET VARIABLE) was a traceback; ``-f json -n``
    printed the elided-rows note into stdout, so the JSON did not parse."""
    import json

    got = run(
        app,
        ["query", "requests_in_flight", "-d", str(sample), "-p", "at=2025-10-29 21:34:47.412", "-f", "json"],
    )
    assert got.exit_code == 0, got.output
    rows = json.loads(got.stdout)
    assert rows and {r["at"] for r in rows} == {"2025-10-29T21:34:47.412000Z"}
    cut = run(app, ["query", "abort_to_assert", "-d", str(sample), "-f", "json", "-n", "2"])
    assert cut.exit_code == 0
    assert len(json.loads(cut.stdout)) == 2
    assert "(8 more row(s) not shown: --limit 2)" in cut.stderr
    csv_cut = run(app, ["query", "abort_to_assert", "-d", str(sample), "-f", "csv", "-n", "3"])
    assert len(csv_cut.stdout.strip().splitlines()) == 4 and "more row(s) not shown" not in csv_cut.stdout


def test_show_opens_a_relative_input_from_anywhere_and_says_its_clock(tmp_path, monkeypatch):
    """An input given relative to where ingest ran: show's command names its absolute path; a record
    whose line prints no zone is stated as printed (issue 30 item 8)."""
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "prefill.log").write_text(
        "[2025-10-29 21:34:46 TP0] Prefill batch, #new-seq: 1, #new-token: 8, #cached-token: 0, "
        "token usage: 0.01, #running-req: 0, #queue-req: 0\n"
        "[2025-10-29 21:34:47 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
    )
    monkeypatch.chdir(tmp_path)
    ingest([Path("logs/prefill.log")], tmp_path / "out")
    monkeypatch.chdir("/")
    result = run(app, ["show", str(query(tmp_path / "out", "SELECT max(event_id) FROM events").item()),
                       "-d", str(tmp_path / "out")])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert f"in the file: sed -n '1,22p' {tmp_path / 'logs' / 'prefill.log'}" in result.output
    assert "> 2025-10-29 21:34:47.000000 (as printed, zone not printed)" in result.output


def test_a_file_that_is_not_utf8_says_so_in_sources(tmp_path):
    """Latin-1 bytes (issue 30 item 8): the line is kept, its bad byte as U+FFFD, and sources says how
    many lines hold one."""
    log = tmp_path / "l1.log"
    log.write_bytes(b"[2025-10-29 21:34:46 TP0] caf\xe9 latin-1\n[2025-10-29 21:34:47 TP0] plain\n")
    ingest([log], tmp_path / "out")
    (notes,) = query(tmp_path / "out", "SELECT notes FROM sources")["notes"]
    assert notes.startswith("1 line(s) hold U+FFFD: bytes that are not UTF-8")
    assert query(tmp_path / "out", "SELECT message FROM events ORDER BY event_id")["message"][0].endswith(
        "caf\ufffd latin-1"
    )


def test_a_bad_since_with_a_journal_names_the_option_not_a_damaged_journal(tmp_path):
    """Third trial F7: `--since yesterday-ish` with a journal read as "journalctl refused it … --verify
    names the damaged file"; it is refused before journalctl runs, naming the option and the forms."""
    need_journalctl()
    bad = run(app, ["ingest", str(SAMPLE / "journal"), "--since", "yesterday-ish", "-o", str(tmp_path / "o")])
    assert bad.exit_code == 1
    assert "--since 'yesterday-ish'" in bad.output and "'2h ago'" in bad.output
    assert "--verify" not in bad.output and not (tmp_path / "o").exists()
