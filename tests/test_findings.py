"""Findings of every kind, the summary that leads the report, ``--format json`` and ``--format issue``:
on the sample incident and on real cases whose main event is a crash, a collective timeout or a storm
of bootstrap failures (values from each batch's README)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from logcorr.analysis import findings as findings_mod
from logcorr.analysis import saved
from logcorr.cli import app
from logcorr.ingest import ingest
from logcorr.render import issue as issue_mod
from logcorr.render import report as report_mod
from tests.conftest import CASES, SAMPLE, ingested, need_journalctl, sql

# one worker runs the module (pytest-xdist --dist loadgroup): the sample's issue draft made once (draft)
pytestmark = pytest.mark.xdist_group("findings")

ROOM = 4384674655194745451


@pytest.fixture(scope="module")
def sample_out(tmp_path_factory) -> Path:
    need_journalctl()
    return ingested(
        SAMPLE / "journal",
        *sorted((SAMPLE / "pyspy").glob("*_214010.txt")),
        captured_at="2025-10-29 21:40:10",
    )


def _case(tmp_path: Path, rel: str) -> Path:
    """The shared OUT of the case file ``rel`` ingested alone (``tmp_path``: no longer used)."""
    return ingested(CASES / rel)


def _summary(text: str) -> str:
    return text.split("## Summary", 1)[1].split("\n## ", 1)[0]


def test_the_sample_summary_names_the_wedge_trigger_desync_impact_and_first_action(sample_out):
    text = report_mod.report(sample_out)
    summary = _summary(text)
    lines = [line for line in summary.splitlines() if line.strip()]
    assert 1 <= len(lines) <= 6
    assert lines[0].startswith("- **What happened**: Decode wedged at 2025-10-29 21:34:47 UTC")
    assert "4 rank(s) (TP0, TP1, TP2, TP3)" in lines[0] and "22 request(s) running" in lines[0]
    assert f"Transfer worker assertion for room {ROOM}" in summary  # the trigger
    assert "TP desync in decode: broadcast(gloo): TP0,TP1 | all_reduce(nccl): TP2,TP3" in summary
    assert "137 router request(s) answered 5xx (502×137" in summary  # the impact
    action = re.search(r"\*\*What to do now\*\*: 1\. ([^;]+);", summary)
    assert action and "--disable-overlap-schedule" in action.group(1) and "sglang#26454" in action.group(1)
    # the summary comes first, the verdict (every true answer of before) after the findings
    assert text.index("## Summary") < text.index("## Findings") < text.index("## Verdict")


def test_the_sample_impact_is_what_requests_say(sample_out):
    from logcorr.analysis.saved import query

    n502 = query(sample_out, "SELECT count(*) AS n FROM requests WHERE role = 'router' AND status = 502")[
        "n"
    ][0]
    assert n502 == 137
    found = findings_mod.findings(sample_out)
    rows = findings_mod.impact(sample_out, found)
    router = rows.filter(pl.col("role") == "router").row(0, named=True)
    assert router["failed"] == n502 and router["statuses"] == "502×137"


def test_the_sample_findings_are_in_causal_order(sample_out):
    found = findings_mod.findings(sample_out)
    kinds = found["kind"].to_list()
    order = ["abort_burst", "transfer_assertion", "wedge", "rank_divergence", "restart"]
    assert [k for k in kinds if k in order][: len(order)] == order
    assert found["step"].to_list() == list(range(1, found.height + 1))
    timed = found.filter(pl.col("ts").is_not_null())["ts"].to_list()
    assert timed == sorted(timed)
    wedge = found.filter(pl.col("kind") == "wedge").row(0, named=True)
    assert wedge["role"] == "decode" and wedge["ranks"] == ["TP0", "TP1", "TP2", "TP3"]
    assert wedge["evidence"]  # the last batch, the restart, the next batch
    lies = found.filter((pl.col("kind") == "health_lies") & (pl.col("role") == "decode")).row(0, named=True)
    assert lies["n"] == 36
    assertion = found.filter(pl.col("kind") == "transfer_assertion").row(0, named=True)
    assert assertion["ranks"] == ["TP0", "TP1", "TP3"] and str(ROOM) in assertion["summary"]


def test_the_chain_is_numbered_in_time_order(sample_out):
    text = report_mod.report(sample_out)
    chain = text.split("## Chain of events (incident_chain)", 1)[1].split("\n## ", 1)[0]
    numbers = [int(m) for m in re.findall(r"^\| (\d+) \|", chain, flags=re.M)]
    assert numbers == list(range(1, len(numbers) + 1)) and len(numbers) >= 8


def test_known_issue_entries_put_the_action_first_and_links_last(sample_out):
    text = report_mod.report(sample_out)
    section = text.split("## Known upstream issues (known_issues)", 1)[1].split("\n## ", 1)[0]
    entry = section.split("**1. F1:", 1)[1].split("\n\n**", 1)[0]  # the summary's likely family first
    items = [line for line in entry.splitlines() if line.startswith("- ")]
    assert items[0] == (
        "- First because it is a bug mechanism whose evidence rows lie on the main finding's role (decode)."
    )
    assert items[1].startswith("- What to do now: run decode with `--disable-overlap-schedule`")
    assert items[-1].startswith("- Links: https://github.com/sgl-project/sglang/issues/26454")
    assert all(len(line) < 700 for line in items)


def test_report_json_validates_against_its_schema(sample_out):
    jsonschema = pytest.importorskip("jsonschema")
    result = CliRunner().invoke(app, ["report", "-d", str(sample_out), "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    jsonschema.validate(data, json.loads(report_mod.SCHEMA.read_text()))
    assert data["main"]["kind"] == "wedge" and data["main"]["ts"] == "2025-10-29T21:34:47.414741Z"
    assert any(f["kind"] == "rank_divergence" for f in data["findings"])
    assert data["summary"] == report_mod.summary_lines(report_mod.gather(sample_out))
    assert [k["family"] for k in data["known_issues"]] == ["F1", "F14", "F15"]  # the summary's order


def test_report_issue_is_a_short_markdown_draft_naming_the_family(sample_out):
    result = CliRunner().invoke(app, ["report", "-d", str(sample_out), "--format", "issue"])
    assert result.exit_code == 0, result.output
    text = result.output
    lines = text.splitlines()
    assert len(lines) < 300
    assert lines[0].startswith("# [Bug] Decode wedged")
    for heading in ("### Describe the bug", "### Reproduction", "### Environment"):
        assert heading in lines
    assert "sglang#26454" in text and "https://github.com/sgl-project/sglang/issues/26454" in text
    assert sum(line.startswith("```") for line in lines) % 2 == 0  # every fence closed
    assert re.search(r"^prefill TP3, `[^`]*journal:entry i=11f2`:$", text, flags=re.M)  # evidence per rank
    assert "| decode | TP2 | all_reduce | nccl | event_loop_overlap_disagg_decode |" in text  # py-spy groups
    assert "| disaggregation_transfer_backend | nixl | nixl | nixl | nixl |" in text
    try:
        from markdown_it import MarkdownIt
    except ImportError:
        return
    tokens = MarkdownIt().enable("table").parse(text)
    assert sum(t.type == "table_open" for t in tokens) == 2 and sum(t.type == "fence" for t in tokens) >= 8


# --- issue 46 item 6 (newcomer trial C16): the draft is pasteable ---------------------------------------


@pytest.fixture(scope="module")
def draft(sample_out) -> str:
    result = CliRunner().invoke(app, ["report", "-d", str(sample_out), "--format", "issue"])
    assert result.exit_code == 0, result.output
    return result.output


def _block_after(text: str, heading: str) -> str:
    """The fenced block right under the line ``heading`` (a pattern), without its fences."""
    return re.search(rf"(?m)^{heading}\n```text\n(.*?)\n```$", text, re.S).group(1)


def test_issue_title_says_what_broke_not_when(draft):
    assert draft.splitlines()[0] == (
        "# [Bug] Decode wedged: no batch on any of its 4 rank(s) for 439 s with 22 request(s) running,"
        " while prefill went on and /health kept answering 200"
    )


def test_issue_redacts_hosts_paths_internal_urls_and_the_model_by_default(sample_out, draft):
    for private in ("gpu-node-1", "127.0.0.1", "/opt/sglang", "/models/Llama-3.1-70B-Instruct", str(SAMPLE)):
        assert private not in draft, private
    assert "- **When and where**: 2025-10-29 21:34:47 UTC, decode on host-1, TP0, TP1, TP2, TP3." in draft
    assert "decode_url=http://host-2:30001 error=" in draft  # the internal URL's host, its port kept
    assert '  File "<path>/sglang/srt/disaggregation/nixl/conn.py", line 702, in transfer_worker' in draft
    assert "| model_path | model-1 | model-1 | model-1 | model-1 |" in draft
    assert "https://github.com/sgl-project/sglang/issues/26454" in draft  # public links stay
    kept = CliRunner().invoke(app, ["report", "-d", str(sample_out), "--format", "issue", "--no-redact"])
    assert kept.exit_code == 0 and "decode on gpu-node-1, TP0" in kept.output
    assert (
        "/opt/sglang/.venv/lib/python3.12/site-packages/sglang/srt/disaggregation/nixl/conn.py" in kept.output
    )
    assert "| model_path | /models/Llama-3.1-70B-Instruct |" in kept.output
    refused = CliRunner().invoke(app, ["report", "-d", str(sample_out), "--no-redact"])
    assert refused.exit_code == 1 and "only --format issue redacts" in refused.output


def test_issue_evidence_lines_are_whole_and_the_traceback_keeps_its_exception(draft):
    lines = _block_after(draft, "prefill TP0, `[^`]*journal:entry i=11e7`:").splitlines()
    assert lines[:2] == [
        "[2025-10-29 21:34:43 TP0] Unexpected transfer worker error for room 4384674655194745451",
        "Traceback (most recent call last):",
    ]
    assert lines[2].endswith('/sglang/srt/disaggregation/nixl/conn.py", line 702, in transfer_worker')
    assert lines[3:] == ["    assert room in self.transfer_infos", "AssertionError"]
    assert _block_after(draft, "prefill TP1, `[^`]*journal:entry i=110d`:").endswith(
        "with exception KVTransferError(bootstrap_room=4671646379800654348): Aborted by AbortReq."
    )
    long = "\n".join(
        ["head", "Traceback (most recent call last):", *[f'  File "f{i}.py"' for i in range(9)], "E"]
    )
    assert issue_mod._record_text(long).splitlines() == [
        "head", "Traceback (most recent call last):", "…", '  File "f5.py"', '  File "f6.py"', '  File "f7.py"',
        '  File "f8.py"', "E",
    ]  # fmt: skip


def test_issue_quotes_the_stacks_of_the_divergent_ranks(draft):
    heads = re.findall(r"(?m)^(\w+ TP\d) \(pid \d+\) waits in (\S+); thread MainThread", draft)
    assert heads == [
        ("decode TP0", "broadcast(gloo)"), ("decode TP1", "broadcast(gloo)"),
        ("decode TP2", "all_reduce(nccl)"), ("decode TP3", "all_reduce(nccl)"),
    ]  # fmt: skip
    tp0 = _block_after(
        draft,
        re.escape(
            "decode TP0 (pid 3371) waits in broadcast(gloo); thread MainThread (idle), innermost frame first:"
        ),
    )
    assert tp0.splitlines()[:2] == ["    0x7fc31afce117 (libc.so.6)", "    pthread_cond_wait (libc.so.6)"]
    assert "    broadcast (torch/distributed/distributed_c10d.py:2772)" in tp0 and tp0.endswith(
        "… 5 outer frame(s)"
    )
    tp2 = _block_after(
        draft,
        re.escape(
            "decode TP2 (pid 3373) waits in all_reduce(nccl); thread MainThread (active), innermost frame first:"
        ),
    )
    assert "    ncclAllReduce (libnccl.so.2)\n    c10d::ProcessGroupNCCL::allreduce (libtorch_cuda.so)" in tp2


def test_the_timeline_header_shows_the_summary(sample_out, tmp_path):
    from logcorr.render.timeline import timeline

    html = tmp_path / "t.html"
    timeline(sample_out, html)
    page = html.read_text()
    head, folded = page.split("<details>", 1)
    lead = head.split('<div class="summary">', 1)[1].split("</div>", 1)[0]
    assert "<b>What happened</b>: Decode wedged at 2025-10-29 21:34:47 UTC" in lead
    # the rest of the summary folds under one line, so the time axis is on the first screen
    rest = folded.split("</details>", 1)[0].split('<div class="summary">', 1)[1].split("</div>", 1)[0]
    assert "<b>Likely upstream family</b>: F1" in rest and "--disable-overlap-schedule" in rest
    assert "What happened" not in rest


# --- real cases whose main event is not a wedge ----------------------------------------------------------


def _lead(out: Path) -> tuple[str, str]:
    text = report_mod.report(out)
    return text, _summary(text)


def test_npu_scheduler_exception_is_a_crash_not_a_stall(tmp_path):
    """batch3/05: TP1 raised at 07:20:43 (RuntimeError), SIGQUIT followed; the 581 s between the last
    batch (07:11:02) and the crash hold no record: no data, not a stall."""
    text, summary = _lead(_case(tmp_path, "batch3/05_npu_scheduler_exception_hccl_watchdog_sigquit.log"))
    assert (
        "**What happened**: Scheduler (engine) crashed on TP1 at 2026-07-07 07:20:43: RuntimeError: The Inner error"
        in summary
    )
    assert "SIGQUIT received" in summary
    assert not re.search(r"(?i)wedge|stall", summary)
    verdict = text.split("## Verdict", 1)[1].split("\n## ", 1)[0]
    assert "stalled" not in verdict.lower()
    assert "No data from 2026-07-07 07:11:02 to 2026-07-07 07:20:43 (582 s)" in verdict
    # SGLang's lines print no zone: the times are stated as printed, never as UTC
    assert "When and where**: 2026-07-07 07:20:43 as printed (zone not printed), engine, TP1." in summary
    assert " UTC" not in summary


def test_a_finding_is_zoned_only_when_its_records_print_their_zone(tmp_path):
    """batch3/05 prints SGLang's zoneless times; batch4/04's CRI lines carry +08:00 (zoned)."""
    zoneless = _case(tmp_path / "a", "batch3/05_npu_scheduler_exception_hccl_watchdog_sigquit.log")
    crash = "SELECT zoned, ts::VARCHAR FROM findings WHERE kind = 'scheduler_crash'"
    assert sql(zoneless, crash) == [(False, "2026-07-07 07:20:43+00")]
    zoned = _case(tmp_path / "b", "batch4/04_cri_stdout_mtp_prefill_batches_then_tp2_eagle_exception_cut.log")
    assert sql(zoned, crash) == [(True, "2025-07-24 23:53:08.217487+00")]


def test_eagle_exception_after_a_paste_gap_is_a_crash(tmp_path):
    """batch4/04: two prefill batches at 05:09:16 (+08:00), then TP2's 'Scheduler hit an exception' at
    07:53:08 (+08:00) whose traceback is cut: no exception type is invented, and the 9832 s between the
    two pasted excerpts is no data, not a stop."""
    text, summary = _lead(
        _case(tmp_path, "batch4/04_cri_stdout_mtp_prefill_batches_then_tp2_eagle_exception_cut.log")
    )
    assert (
        "Scheduler (engine) crashed on TP2 at 2025-07-24 23:53:08 UTC: exception type not printed" in summary
    )
    assert "forward_batch_speculative_generation" in summary
    assert not re.search(r"(?i)wedge|stall", summary)
    assert "Engine stalled" not in text and "No data from 2025-07-24 21:09:16 UTC" in text


def test_decode_scheduler_exception_with_ms_timestamp(tmp_path):
    """sglang/13: decode TP1 raised at 23:38:59.096 in process_decode_queue (decode.py:1773)."""
    _, summary = _lead(_case(tmp_path, "sglang/13_scheduler_exception_ms_timestamp_disagg_decode.log"))
    assert "Scheduler (decode) crashed on TP1 at 2026-05-27 23:38:59" in summary
    assert "process_decode_queue (decode.py:1773)" in summary
    assert "decode, TP1." in summary
    assert not re.search(r"(?i)wedge|stall", summary)


def test_nccl_watchdog_is_a_collective_timeout(tmp_path):
    """real2/11: ranks 1 and 0, WorkNCCL SeqNum 1 ALLREDUCE, Timeout(ms)=600000, ran 600003/600009 ms,
    last completed -1; glog prints no year, so the time stays unknown, quoted as printed (without the
    level letter E that c10 glues to the month)."""
    out = _case(tmp_path, "real2/11_nccl_watchdog_allreduce_seqnum1_multirank.log")
    _, summary = _lead(out)
    assert (
        "**What happened**: Collective timeout (NCCL watchdog) on rank 0, rank 1 (no time read; printed without a"
        " year: 11-12 09:49:50.022718554): ALLREDUCE SeqNum 1" in summary
    )
    assert (
        "ran 600009 ms, past its 600 s timeout; last completed work -1 (no collective of the group ever completed)"
        in summary
    )
    assert not re.search(r"(?i)wedge|stall", summary)
    row = findings_mod.main_finding(findings_mod.findings(out))
    assert row["kind"] == "collective_timeout" and row["n"] == 2 and row["ts"] is None


def test_bootstrap_failures_are_a_storm_by_cause(tmp_path):
    """batch4/07: two prefill bootstrap failures on DP1 (rank=0 is the TP rank), rooms
    818533314937763119 and 5560925207985320907, cause: the follow_bootstrap_room routing conflict."""
    out = _case(tmp_path, "batch4/07_prefill_bootstrap_failed_wrapped_records_dp_rank_conflict_grep.log")
    _, summary = _lead(out)
    assert '2 "Prefill bootstrap failed" record(s) on prefill DP1 TP0 from 2026-06-30 05:18:57' in summary
    assert "2 room(s) (818533314937763119, 5560925207985320907); cause routing_conflict" in summary
    found = findings_mod.findings(out)
    assert found["kind"].to_list() == ["bootstrap_failures"] and found["evidence"][0].len() == 2


@pytest.mark.heavy
def test_a_synthetic_crash_loop_day_is_told_as_a_crash_and_a_loop(tmp_path):
    """bench/make_day.py --crash-loop: decode's TP1 raises four times, systemd restarts the unit each
    time (restart counter 1 to 4) while prefill goes on: the summary names the crash and the loop."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("make_day", CASES.parents[1] / "bench" / "make_day.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("make_day", mod)
    spec.loader.exec_module(mod)
    meta = mod.make_day(30_000, tmp_path / "day", journal=False, json_capture=False, log=lambda s: None,
                        incident_kind="crash_loop")  # fmt: skip
    assert meta["incident"]["crashes"] == 4
    ingest([tmp_path / "day" / "day.export"], tmp_path / "out")
    summary = _summary(report_mod.report(tmp_path / "out"))
    first = meta["incident"]["first_crash"][:19].replace("T", " ")
    assert (
        f"**What happened**: Scheduler (decode) crashed on TP1 at {first} UTC: RuntimeError: CUDA error"
        in summary
    )
    assert "(4 tracebacks)" in summary and "Crash loop: sglang-decode.service" in summary
    assert not re.search(r"(?i)wedge|stall", summary)
    found = findings_mod.findings(tmp_path / "out")
    loop = found.filter(pl.col("kind") == "crash_loop").row(0, named=True)
    assert loop["n"] == 4 and "restart counter up to 4" in loop["summary"]


def test_a_file_without_failure_says_so(tmp_path):
    log = tmp_path / "ok.log"
    log.write_text(
        "".join(
            f"[2026-01-01 00:00:0{i} TP0] Decode batch, #running-req: 1, #token: 10, token usage: 0.00, "
            "cuda graph: True, gen throughput (token/s): 10.00, #queue-req: 0\n"
            for i in range(5)
        )
    )
    ingest([log], tmp_path / "out")
    summary = _summary(report_mod.report(tmp_path / "out"))
    assert "the data shows no failure" in summary


def test_every_finding_kind_is_in_the_schema_and_the_order():
    schema = json.loads(report_mod.SCHEMA.read_text())
    kinds = set(schema["$defs"]["finding"]["properties"]["kind"]["enum"])
    assert kinds == set(findings_mod.KIND_ORDER)
    assert set(findings_mod.MAIN_ORDER) <= kinds
    assert issue_mod.EVIDENCE_KINDS and set(issue_mod.EVIDENCE_KINDS) <= kinds


def test_the_sample_dumps_count_processes_once_over_two_rounds(sample_out):
    """The sample holds the watchdog's embedded dumps of the 4 decode ranks (21:39:47) and the
    operator's files of all 8 schedulers (21:40:10): 8 processes in 12 dumps, decode TP2 and TP3 twice."""
    ((n, summary),) = sql(sample_out, "SELECT n, summary FROM findings WHERE kind = 'stacks_captured'")
    assert n == 12
    assert summary.startswith(
        "py-spy dumps of 8 processes (12 dumps): 4 prefill scheduler ranks TP0-TP3 wait in"
    )
    assert "2 decode scheduler ranks TP2-TP3 (4 dumps) wait in all_reduce (nccl)" in summary
    assert "1 decode scheduler rank TP0 (2 dumps) waits in broadcast (gloo)" in summary


def test_sglang_rank_consensus_lines_are_a_rank_divergence_finding(tmp_path):
    """SGLang's rank-consensus checker (sglang#34406): each rank logs its own hash; TP2's differs. The
    finding groups the ranks by hash and leads the summary; the lines are watchdogs rows."""
    events = "events = ['check_prefetch_progress called params=({}1,)', 'get_next_batch_to_run result=None']"
    hashes = {
        0: "9f86d081884c7d659a2f",
        1: "9f86d081884c7d659a2f",
        2: "2c26b46b68ffc68ff99b",
        3: "9f86d081884c7d659a2f",
    }
    log = tmp_path / "prefill.log"
    log.write_text(
        "".join(
            f"[2026-08-12 10:00:01 TP{r}] Found rank divergence for 2 events(s)! local hash: {h}, "
            + events.format("" if r != 2 else "-")
            + "\n"
            for r, h in hashes.items()
        )
    )
    out = tmp_path / "out"
    ingest([log], out)
    rows = saved.query(
        out, "SELECT tp_rank, reason FROM watchdogs WHERE watchdog_kind = 'rank_divergence' ORDER BY tp_rank"
    )
    assert rows["tp_rank"].to_list() == [0, 1, 2, 3]
    assert rows["reason"][2].startswith("2 events(s)! local hash: 2c26b46b68ffc68ff99b, events = [")
    (f,) = findings_mod.findings(out).filter(pl.col("kind") == "rank_divergence").iter_rows(named=True)
    assert f["ranks"] == ["TP0", "TP1", "TP2", "TP3"] and f["n"] == 4 and len(f["evidence"]) == 4
    assert (
        "at 2026-08-12 10:00:01: 2 event(s) hashed differently: TP0,TP1,TP3 hash 9f86d081884c… | TP2 hash 2c26b46b68ff…"
        in f["summary"]
    )
    assert f["zoned"] is False  # SGLang's header prints local time


def test_the_kinds_search_the_records_read_once() -> None:
    """Issue 49: each kind file read every record's text (ten scans of ``events.message``, nine in ten
    of them batch lines), 7.7 CPU s at 64 hosts. The kinds now read ``records`` (``events`` without
    the batch lines alone), held once by the composite; only a kind that needs every record (a stop's
    silence, the records after a start-up step, the source of the batch line before a dump that shows
    no hung rank) reads ``events``."""
    from logcorr.analysis import finding_kinds

    def reads(sql: str, table: str) -> bool:
        code = "\n".join(line.split("--")[0] for line in sql.splitlines())
        return re.search(rf"\b(FROM|JOIN)\s+{table}\b", code) is not None

    kinds = finding_kinds.kind_queries()
    assert {n for n, s in kinds.items() if reads(s, "events")} == {"stop", "startup", "stacks"}
    assert {n for n, s in kinds.items() if reads(s, "records")} == {
        "aborts", "child_exits", "crash", "cuda", "kv_wait", "restart", "scrape", "stacks", "startup", "transfer",
        "unexplained", "watchdog",
    }  # fmt: skip
    made = saved.load_saved()["findings"].sql
    assert made.count("records AS MATERIALIZED (") == 1


def test_records_leave_out_only_the_batch_lines_alone(sample_out: Path) -> None:
    """``records`` is every record of ``events`` but a batch line alone (one line, kind batch): on the
    sample, 2,724 of its 5,972 records are such lines, and the 3,248 others are kept."""
    from logcorr.analysis import finding_kinds

    ((kept, all_, lone, lone_kept, others),) = sql(
        sample_out,
        f"WITH {finding_kinds.RECORDS_SQL} SELECT (SELECT count(*) FROM records), (SELECT count(*) FROM events), "
        "(SELECT count(*) FROM events WHERE kind = 'batch' AND n_lines = 1), "
        "(SELECT count(*) FROM records WHERE kind = 'batch' AND n_lines = 1), "
        "(SELECT count(*) FROM events WHERE kind IS DISTINCT FROM 'batch' OR n_lines > 1)",
    )
    assert (all_, lone, lone_kept) == (5972, 2724, 0)
    assert kept == others == 3248


def test_a_crash_known_from_its_client_leads_only_without_the_engine_s_own_failure():
    # batch19/06: vLLM's API server reports EngineDeadError ("See stack trace (above) for the root
    # cause") after the engine's CUDA illegal memory access on rank 0: the CUDA error is the main event;
    # alone (batch13/11), the reported death leads, and an untyped traceback beside it does not
    dead = "EngineCore died, as its client (pid 1) reported it (rank not printed) (no time read): EngineDeadError"
    rows = [
        {"kind": "scheduler_crash", "ts": None, "summary": dead},
        {"kind": "cuda_error", "ts": None, "summary": "CUDA illegal memory access on rank 0: 2 record(s)"},
        {"kind": "unexplained_crash", "ts": None, "summary": "Unexplained crash or exception: …"},
    ]
    schema = {"kind": pl.String, "ts": pl.Datetime("us", "UTC"), "summary": pl.String}
    both = pl.DataFrame(rows, schema=schema)
    assert findings_mod.main_finding(both)["kind"] == "cuda_error"
    alone = pl.DataFrame([rows[0], rows[2]], schema=schema)
    assert findings_mod.main_finding(alone)["summary"] == dead
