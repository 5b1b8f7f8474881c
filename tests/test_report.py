"""``logcorr report``: the postmortem summary, checked against sample_logs/README.md's true answers."""

from __future__ import annotations

import importlib.util
import re
import shutil
import sys
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from logcorr.analysis import saved
from logcorr.cli import app
from logcorr.ingest import ingest, table_schemas
from logcorr.render.report import report
from logcorr.store.output import Output
from tests.conftest import ingested

# one worker runs the module (pytest-xdist --dist loadgroup): the sample's report made once (text)
pytestmark = pytest.mark.xdist_group("report")

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_logs"
CASES = Path(__file__).parent / "cases"
TS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")


def truth(pattern: str) -> str:
    """The answer of the one row of README's "True answers" whose question matches ``pattern``."""
    table = (SAMPLE / "README.md").read_text().split("## True answers", 1)[1]
    rows = []
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 2 and re.search(pattern, cells[0], re.IGNORECASE):
            rows.append(cells[1])
    assert len(rows) == 1, f"README: {len(rows)} questions match {pattern!r}"
    return rows[0]


def ts(text: str, n: int = 0) -> datetime:
    return datetime.fromisoformat(TS.findall(text)[n].replace("Z", "+00:00")).astimezone(UTC)


def hms(t: datetime, ms: bool = True) -> str:
    """``21:34:47.412`` as the report prints times."""
    return t.strftime("%H:%M:%S") + (f".{t.microsecond // 1000:03d}" if ms else "")


@pytest.fixture(scope="session")
def sample_out(tmp_path_factory) -> Path:
    if not (SAMPLE / "journal").exists():
        pytest.skip("sample_logs not built")
    journal = SAMPLE / "journal" if shutil.which("journalctl") else SAMPLE / "journal.export"
    return ingested(journal, SAMPLE / "pyspy", SAMPLE / "router.log")  # shared: read only


@pytest.fixture(scope="session")
def text(sample_out) -> str:
    return report(sample_out)


def section(text: str, title: str) -> str:
    return text.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def test_report_names_room_ranks_groups_and_restart(text):
    verdict = section(text, "Verdict")
    room = truth(r"^the room R$").strip("`")
    assert f"room {room}" in verdict
    assert "`assert room in self.transfer_infos` on prefill TP0, TP1, TP3 at" in verdict
    assert hms(ts(truth(r"^assertion on prefill TP0"))) in verdict
    assert "**TP desync in decode**" in verdict
    assert "broadcast(gloo): TP0,TP1 | all_reduce(nccl): TP2,TP3" in verdict
    assert "Prefill ranks are in lockstep: all_reduce(nccl): TP0,TP1,TP2,TP3" in verdict
    stop = min(ts(truth(f"last decode batch, decode TP{tp}")) for tp in range(4))
    assert f"**Decode wedged** at {stop:%Y-%m-%d} {hms(stop)} UTC" in verdict
    assert "prefill went on" in verdict and "/health answered 200 36 times and never otherwise" in verdict
    restart = ts(truth(r"^restart issued"))
    assert f"the restart came at {restart:%Y-%m-%d} {hms(restart)} UTC" in verdict
    burst = truth(r"first / last abort line of any kind")
    assert (
        f"**Abort burst** from {ts(burst):%Y-%m-%d} {hms(ts(burst))} UTC to {hms(ts(burst, 1))} UTC"
        in verdict
    )


def test_router_log_beside_the_journal_is_counted_once_and_said(sample_out, text):
    """The README's sample_logs/router.log holds the journal's router lines: read once (137 502s, not
    274), and the report's head says which input was skipped and why."""
    (impact,) = [line for line in section(text, "Summary").splitlines() if "**Impact**" in line]
    assert "137 router request(s) answered 5xx (502×137" in impact
    assert "Read once: " in text.split("## Summary")[0]
    assert "router.log: 1,097 of its lines are also in " in text and "a copy, skipped (counted once)" in text
    assert (
        saved.query(sample_out, "SELECT count(*) FROM requests WHERE role = 'router' AND status = 502").item()
        == 137
    )


def test_report_chain_and_evidence(text):
    chain = section(text, "Chain of events (incident_chain)")
    steps = [line.split("|")[2].strip() for line in chain.splitlines() if re.match(r"\| \d", line)]
    assert steps[:5] == ["abort_burst", "assertion", "last_batch", "health", "stuck_stacks"]
    assert {"restart", "ready", "resumed"} <= set(steps)
    evidence = section(text, "Evidence")
    lines = [line for line in evidence.splitlines() if line.startswith("- ")]
    assert len(lines) >= len(steps)
    # every evidence line is source:position and the line itself
    assert all(
        re.match(r"- [\w ]+( of room \d+)? ?(\([\w ]+\))?: `[^`]+:[^`]+`: .+", line) for line in lines
    ), lines
    assert any("Unexpected transfer worker error for room" in line for line in lines)
    assert any("Stopping sglang-decode.service" in line for line in lines)


def test_report_says_what_the_data_cannot_say(text):
    missing = section(text, "What the data cannot say (coverage)")
    # the router logs neither room nor rid: the request behind the assertion cannot be named
    assert "the client request behind the assertion cannot be named" in missing
    # the hand-taken prefill dumps are bare files: no capture time
    assert "prefill TP0 on gpu-node-1: py-spy capture without capture time" in missing


def test_every_time_in_the_report_is_in_a_query_row(sample_out, text):
    """No claim without a row: each clock time the report prints appears in some saved query's rows."""
    con = saved.connect(sample_out)
    rows = "\n".join(
        saved.format_frame(saved.query(sample_out, name, con=con), "csv") for name in saved.load_saved()
    )
    times = set(re.findall(r"\b\d\d:\d\d:\d\d(?:\.\d{3})?\b", text))
    assert times
    assert sorted(t for t in times if t not in rows) == []


def test_report_of_case_02_alone(tmp_path):
    files = sorted((CASES / "sglang").glob("02_*.log")) if CASES.exists() else []
    if not files:
        pytest.skip(f"case 02 not found under {CASES}")
    out = tmp_path / "out"
    ingest(files, out)
    text = report(out)
    assert "No transfer_infos assertion was read; 1 room(s) were aborted" in text
    assert "| 7561186998443553199 |" in text
    missing = section(text, "What the data cannot say (coverage)")
    assert (
        "decode: no record read as the decode engine's, so logcorr can say nothing about that engine."
        in missing
    )
    assert "No py-spy or faulthandler dump was read" in missing


def test_report_of_empty_tables(tmp_path):
    out = tmp_path / "empty"
    Output(out, table_schemas()).commit({"inputs": []})
    text = report(out)
    assert "No step of the chain has a row" in text
    assert "no record read as the router's" in text


def test_report_command_writes_a_file(sample_out, tmp_path):
    target = tmp_path / "report.md"
    result = CliRunner().invoke(app, ["report", "-d", str(sample_out), "-o", str(target)])
    assert result.exit_code == 0, result.output
    assert target.read_text().startswith("# Incident report")
    printed = CliRunner().invoke(app, ["report", "-d", str(sample_out)])
    assert printed.exit_code == 0 and printed.output == target.read_text()
    missing = CliRunner().invoke(app, ["report", "-d", str(tmp_path / "nope")])
    assert missing.exit_code == 1 and "run logcorr ingest first" in missing.output


# --- bench/make_day.py's synthetic day: the incident's dumps and routine dumps after the restart ---


@pytest.fixture(scope="module")
def day_out(tmp_path_factory) -> Path:
    spec = importlib.util.spec_from_file_location("make_day", ROOT / "bench" / "make_day.py")
    make_day = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("make_day", make_day)  # its dataclasses look their module up there
    spec.loader.exec_module(make_day)
    folder = tmp_path_factory.mktemp("day")
    make_day.make_day(20_000, folder, journal=False, json_capture=False, routine_dumps=12, log=lambda _: None)
    ingest([folder / "day.export"], folder / "out")
    return folder / "out"


@pytest.mark.heavy
def test_synthetic_day_desync_compares_the_incident_round(day_out):
    """The generator dumps every rank at the incident (prefill all in one all_reduce; decode TP0-3 in a
    gloo broadcast, TP4-7 in an all_reduce), then single routine dumps by the restarted processes
    hours later: the verdict compares the incident's round, not each rank's last capture."""
    con = saved.connect(day_out)
    restart = saved.query(day_out, "wedge", con=con).filter(pl.col("role") == "decode")["restart_ts"].min()
    stuck = saved.query(day_out, "stuck_ranks", con=con)
    after = stuck.filter(pl.col("capture_ts") > restart)
    assert set(after["role"]) == {"prefill", "decode"}  # the bug's setting: routine dumps of new pids
    rows = saved.query(day_out, "desync", con=con)
    assert rows.height == 16 and (rows["capture_ts"] < restart).all()
    assert not set(rows["pid"]) & set(after["pid"])
    eight = ",".join(f"TP{tp}" for tp in range(8))
    groups = dict(rows.select("role", "groups").unique().iter_rows())
    assert groups == {
        "prefill": f"all_reduce(nccl): {eight}",
        "decode": "broadcast(gloo): TP0,TP1,TP2,TP3 | all_reduce(nccl): TP4,TP5,TP6,TP7",
    }
    assert dict(rows.select("role", "verdict").unique().iter_rows()) == {
        "prefill": "lockstep",
        "decode": "divergent",
    }
    assert rows["round_basis"].str.starts_with("during the stop of ").all()  # the incident's, not the latest
    verdict = section(report(day_out), "Verdict")
    prefill_round = rows.filter(pl.col("role") == "prefill")["round_ts"][0]
    assert (
        f"Prefill ranks are in lockstep: all_reduce(nccl): {eight} (py-spy round of "
        f"{prefill_round:%Y-%m-%d} {hms(prefill_round)} UTC" in verdict
    )
    assert (
        "**TP desync in decode**: its ranks wait in different places: broadcast(gloo): TP0,TP1,TP2,TP3 | "
        "all_reduce(nccl): TP4,TP5,TP6,TP7 (py-spy round of " in verdict
    )
    assert "cannot be told" not in verdict


def test_the_summary_alone_and_wrapped_for_a_terminal(sample_out):
    """Third newcomer trial B5: the report in a terminal. `--summary` prints the head and the summary
    only; on a terminal the prose is wrapped at its width, list items under their text, tables whole."""
    from logcorr.render.terminal import for_terminal

    result = CliRunner().invoke(app, ["report", "-d", str(sample_out), "--summary"])
    assert result.exit_code == 0
    assert "## Summary" in result.output and "## Findings" not in result.output
    assert "**What happened**: Decode wedged at 2025-10-29 21:34:47 UTC" in result.output
    wrapped = for_terminal("- **What happened**: " + "word " * 30 + "\n| a | " + "x" * 100 + " |\n", 60)
    lines = wrapped.splitlines()
    assert all(len(line) <= 60 for line in lines[:-1]) and lines[1].startswith("  word")
    assert lines[-1].startswith("| a | xxxx") and len(lines[-1]) > 100
    # a terminal renders no Markdown: data's escapes are shown as the characters, code and tables as they are
    shown = for_terminal(
        "- on PG 3 rank 5: \\_ALLGATHER\\_BASE \\[core.py:517\\] &lt;img&gt;\n| a\\|b |\n", 80
    )
    assert shown == "- on PG 3 rank 5: _ALLGATHER_BASE [core.py:517] <img>\n| a\\|b |\n"


# --- issue 47 F10: data reaches Markdown only through markdown.md ---------------------------------


def test_md_escapes_outside_code_and_fences_code():
    from logcorr.markdown import md

    assert md('<img src="x"> ![t](http://h/t.png) *a* \\ `b` _c_ x|y') == (
        '&lt;img src="x"&gt; \\!\\[t\\](http://h/t.png) \\*a\\* \\\\ \\`b\\` \\_c\\_ x|y'
    )
    assert md("x|y", cell=True) == "x\\|y"  # a table cell's pipe
    assert md("decode_req.rid event_loop_overlap ready!") == "decode_req.rid event_loop_overlap ready!"
    assert md("a <b>", code=True) == "`a <b>`"  # inside a code span nothing but its fence
    assert md("x `y` z", code=True) == "``x `y` z``" and md("`y`", code=True) == "`` `y` ``"
    assert md("one\n```\ntwo", code=True) == "````text\none\n```\ntwo\n````"
    assert md("word " * 10, width=22) == "word word word word w…" and md(None) == ""


def test_html_and_images_from_a_log_line_and_a_host_reach_no_markdown_raw(tmp_path):
    """reliability trial F10: a transfer error ending in <img …> and ![t](…), a _HOSTNAME holding
    <img …>: the lead, the per-rank lines and the issue draft show them as text."""
    message = (
        "[2025-10-29 21:40:00 TP0] Decode transfer failed for request rank=0 decode_req.rid='r0'"
        ' decode_req.bootstrap_room=100 with exception KVTransferError: <img src="http://127.0.0.1:9/x.png">'
        " ![t](http://127.0.0.1:9/t.png)"
    )
    entry = [
        "__REALTIME_TIMESTAMP=1761774000000000",
        "_HOSTNAME=gpu<img src=x onerror=alert(1)>",
        "_SYSTEMD_UNIT=sglang-decode.service",
        "_PID=42",
        f"MESSAGE={message}",
    ]
    (tmp_path / "f10.export").write_text("\n".join(entry) + "\n\n")
    out = tmp_path / "out"
    ingest([tmp_path / "f10.export"], out)
    written = tmp_path / "report.md"
    assert CliRunner().invoke(app, ["report", "-d", str(out), "-o", str(written)]).exit_code == 0
    text = written.read_text()
    lines = text.splitlines()
    escaped = '&lt;img src="http://127.0.0.1:9/x.png"&gt; \\!\\[t\\](http://127.0.0.1:9/t.png)'
    assert lines[6] == (
        '- **What happened**: 1 "Decode transfer failed" record(s) on decode TP0 from 2025-10-29 21:40:00'
        f" to 21:40:00, 1 room(s) (100); cause KVTransferError: {escaped}; backend not named."
    )
    assert lines[7].endswith("decode on gpu&lt;img src=x onerror=alert(1)&gt;, TP0.")
    assert "- decode TP0 on gpu&lt;img src=x onerror=alert(1)&gt;: no batch lines" in text  # per rank
    draft = CliRunner().invoke(app, ["report", "-d", str(out), "--format", "issue", "--no-redact"]).output
    redacted = CliRunner().invoke(app, ["report", "-d", str(out), "--format", "issue"]).output
    for got in (text, draft, redacted):
        outside = re.sub(r"(?ms)^```.*?^```$", "", got)  # a fenced block shows its text as it is
        assert "<img" not in outside and "![" not in outside
    assert escaped in draft
