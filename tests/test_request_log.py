"""``request_log``: SGLang's ``--log-requests`` lines (text repr and JSON forms) read by key, and the
tool-call markup families found in the returned text (parsers/sglang.py, research notes 5 and F19)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

import polars as pl
import pytest

from logcorr.analysis import saved
from logcorr.ingest import ingest, records_from_text
from logcorr.parsers import request_log
from tests.conftest import CASES, SAMPLE, ingested, need_journalctl


def rows(text: str) -> list[dict]:
    return request_log.request_log(records_from_text(text, "test.log")).to_dicts()


def finish(out: str, obj: str = "GenerateReqInput(text='Hi', rid='r1', bootstrap_room=7)") -> str:
    """A text-form ``Finish`` line as SGLang's request logger writes it."""
    return f"[2025-10-29 21:30:02] Finish: obj={obj}, out={out}"


META = "'meta_info': {'id': 'r1', 'finish_reason': {'type': 'stop', 'matched': 151336}, 'prompt_tokens': 12, 'completion_tokens': 5, 'cached_tokens': 0, 'e2e_latency': 0.42}"


@pytest.mark.parametrize("family", request_log.MARKUP_FAMILIES, ids=lambda m: m.name)
def test_every_markup_family_sample_is_found(family):
    assert request_log.find_markup(family.sample)[0] == family.name


@pytest.mark.parametrize(
    "text,family,token",
    [
        ("<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f", "deepseek_tool_calls", "<｜tool▁calls▁begin｜>"),
        ("ok <|tool▁calls▁begin|>", "deepseek_tool_calls", "<|tool▁calls▁begin|>"),  # ASCII bar
        ("<｜｜tool▁call▁begin｜｜>", "deepseek_tool_calls", "<｜｜tool▁call▁begin｜｜>"),  # doubled
        ("x <tool▁sep>", None, None),
        ('<｜DSML｜function_calls>\n<｜DSML｜invoke name="f">', "deepseek_dsml", "<｜DSML｜function_calls"),
        ("text </|DSML|invoke>", "deepseek_dsml", "</|DSML|invoke"),
        ("<｜DSML｜tool_calls>", "deepseek_dsml", "<｜DSML｜tool_calls"),
        ("a plain answer about pipes | and DSML", None, None),
        ("", None, None),
        (None, None, None),
    ],
)
def test_find_markup_variants(text, family, token):
    assert request_log.find_markup(text) == (family, token)


def test_real_finish_line_of_an_aborted_request():
    path = CASES / "real2" / "05_tsv_export_cp_pp_finish_abort_prefill_batches.log"
    if not path.exists():
        pytest.skip("real2 case missing")
    got = rows(path.read_text())
    assert len(got) == 1
    r = got[0]
    assert (r["event"], r["format"], r["rid"], r["bootstrap_room"]) == (
        "finished",
        "text",
        "bf890d9ca8ce4008bef7ef25d97f8fba",
        None,
    )
    assert (r["finish_type"], r["finish_message"], r["status_code"]) == (
        "abort",
        "Request running timeout reached.",
        503,
    )
    assert (r["prompt_tokens"], r["completion_tokens"], r["cached_tokens"]) == (32472, 23297, 32320)
    assert r["e2e_latency_s"] == pytest.approx(1201.9242150001228)
    # level 1: no text in out, so no leak can be claimed
    assert (r["output_text"], r["output_chars"], r["output_cut"], r["markup_leak"]) == (
        None,
        None,
        None,
        None,
    )


def test_leak_found_in_the_returned_text_only_never_in_the_prompt():
    prompt = "GenerateReqInput(text='<｜tool▁calls▁begin｜> earlier turn; fake: , out={\\'text\\': \\'<｜DSML｜x\\'}', rid='r1', bootstrap_room=7)"
    out = (
        "{'text': 'Calling <｜DSML｜function_calls>\\n<｜DSML｜invoke name=\"get\">', 'output_ids': [1, 2], "
        + META
        + "}"
    )
    (r,) = rows(finish(out, prompt))
    assert r["markup_leak"] == "deepseek_dsml" and r["markup"] == "<｜DSML｜function_calls"
    assert r["output_text"] == 'Calling <｜DSML｜function_calls>\n<｜DSML｜invoke name="get">'
    assert (r["rid"], r["bootstrap_room"], r["finish_type"], r["completion_tokens"]) == ("r1", 7, "stop", 5)
    clean = "{'text': 'The weather is fine.', " + META + "}"
    (r,) = rows(finish(clean, prompt))
    assert r["markup_leak"] is None and r["output_text"] == "The weather is fine." and r["output_chars"] == 20


def test_keys_found_in_any_order_and_not_inside_nested_values():
    out = (
        "{'meta_info': {'id': 'r1', 'finish_reason': {'type': 'length', 'length': 5}, 'note': {'text': 'no'},"
        " 'prompt_tokens': 3, 'completion_tokens': 5, 'e2e_latency': 1.5e-01}, 'text': \"it's <|tool▁sep|>\"}"
    )
    (r,) = rows(finish(out))
    assert (r["finish_type"], r["prompt_tokens"], r["cached_tokens"], r["e2e_latency_s"]) == (
        "length",
        3,
        None,
        0.15,
    )
    assert r["output_text"] == "it's <|tool▁sep|>" and r["markup_leak"] == "deepseek_tool_calls"


def test_a_text_cut_at_2kb_is_head_and_tail_and_the_cut_makes_no_leak():
    head, tail = "a" * 1020 + "<｜tool", "▁calls▁begin｜>" + "b" * 1010  # a marker split by the cut
    out = "{'text': " + repr(head) + " ... " + repr(tail) + ", " + META + "}"
    (r,) = rows(finish(out))
    assert r["output_cut"] is True and r["markup_leak"] is None
    assert r["output_chars"] == len(head) + len(tail)
    assert r["output_text"] == (head + " ... " + tail)[: request_log.REQUEST_TEXT_CHARS]
    leaking = "{'text': 'x' ... '<｜tool▁calls▁begin｜>y', " + META + "}"
    (r,) = rows(finish(leaking))
    assert r["output_cut"] is True and r["markup_leak"] == "deepseek_tool_calls"


def test_level_0_finish_has_no_text_and_no_leak():
    (r,) = rows(finish("{" + META + "}", "GenerateReqInput(rid='r1', bootstrap_room=None)"))
    assert (r["output_text"], r["markup_leak"], r["output_cut"]) == (None, None, None)
    assert (r["rid"], r["finish_type"], r["prompt_tokens"]) == ("r1", "stop", 12)


def test_receive_lines_text_openai_and_json():
    text = "\n".join(
        [
            "[2025-10-29 21:30:00] Receive OpenAI: obj={'model': 'default', 'rid': 'r1'}",
            "[2025-10-29 21:30:00] Receive: obj=GenerateReqInput(text='<｜DSML｜x', rid='r1', bootstrap_room=5)",
            json.dumps(
                {
                    "timestamp": "2025-10-29T21:30:01",
                    "event": "request.received",
                    "rid": "j1",
                    "obj": {"rid": "j1", "bootstrap_room": 9},
                }
            ),
            json.dumps(
                {
                    "timestamp": "2025-10-29T21:30:01",
                    "event": "request.received.openai",
                    "rid": "j1",
                    "obj": {"rid": "j1"},
                }
            ),
        ]
    )
    got = [(r["event"], r["format"], r["rid"], r["bootstrap_room"], r["markup_leak"]) for r in rows(text)]
    assert got == [
        ("received_openai", "text", "r1", None, None),
        ("received", "text", "r1", 5, None),  # markup in a prompt is no leak
        ("received", "json", "j1", 9, None),
        ("received_openai", "json", "j1", None, None),
    ]


def test_json_finish_with_a_cut_text_and_a_leak():
    head, tail = "<｜tool▁calls▁begin｜>" + "x" * 1004, "y" * 1024
    line = {
        "timestamp": "2025-12-01T10:00:01.5", "event": "request.finished", "rid": "j1",
        "obj": {"rid": "j1", "bootstrap_room": 42},
        "out": {"text": head + "..." + tail, "meta_info": {"id": "j1", "finish_reason": {"type": "abort",
                "message": "Client disconnected", "status_code": 499}, "prompt_tokens": 7,
                "completion_tokens": 2048, "cached_tokens": 1, "e2e_latency": 3.25}},
    }  # fmt: skip
    (r,) = rows(json.dumps(line, ensure_ascii=False))
    assert (r["event"], r["format"], r["rid"], r["bootstrap_room"]) == ("finished", "json", "j1", 42)
    assert (r["finish_type"], r["finish_message"], r["status_code"]) == ("abort", "Client disconnected", 499)
    assert (r["prompt_tokens"], r["completion_tokens"], r["cached_tokens"], r["e2e_latency_s"]) == (
        7,
        2048,
        1,
        3.25,
    )
    assert r["output_cut"] is True and r["output_chars"] == 2048
    assert r["markup_leak"] == "deepseek_tool_calls"
    line["out"]["text"] = "fine"
    del line["out"]["meta_info"]["finish_reason"]["message"]
    (r,) = rows(json.dumps(line))
    assert (r["output_cut"], r["markup_leak"], r["output_text"], r["finish_message"]) == (
        False,
        None,
        "fine",
        None,
    )


def test_other_records_give_no_rows_and_an_empty_frame_has_the_contract():
    assert rows("[2025-10-29 21:30:00 TP0] Decode batch, #running-req: 3, #token: 9, token usage: 0.01") == []
    empty = request_log.request_log(
        pl.DataFrame({"body": [], "message": []}, schema={"body": pl.String, "message": pl.String})
    )
    assert empty.height == 0 and list(empty.columns) == list(request_log.REQUEST_LOG.schema)


# --- the saved queries ------------------------------------------------------------------------------


def _readme_section() -> str:
    text = (SAMPLE / "README.md").read_text()
    return text.split("### Answers with tool-call markup", 1)[1].split("### py-spy", 1)[0]


def _iso(text: str) -> datetime:
    return datetime.fromisoformat(text.strip("` ").replace("Z", "+00:00")).astimezone(UTC)


@pytest.fixture(scope="module")
def sample_out(tmp_path_factory):
    need_journalctl()
    return ingested(SAMPLE / "journal")  # shared: read only


def test_sample_markup_leaks_are_exactly_the_readme_rids_with_their_running_requests(sample_out):
    want = [
        (m.group(1), _iso(m.group(2)), int(m.group(3)), m.group(4))
        for m in re.finditer(
            r"^\| `([0-9a-f]{32})` \| (`[^`]+`) \| (\d+) \| (\w+) \|$", _readme_section(), re.M
        )
    ]
    assert len(want) == 12
    got = saved.query(sample_out, "markup_leaks")
    assert list(zip(got["rid"], got["ts"], got["running_req"], got["markup_leak"], strict=True)) == want
    assert set(got["role"]) == {"decode"} and set(got["host"]) == {"gpu-node-1"}
    assert set(got["finish_type"]) == {"stop"}


def test_sample_leak_rate_per_band_is_the_readme_table(sample_out):
    want = {
        m.group(1): (int(m.group(2)), int(m.group(3)), None if m.group(4) == "-" else float(m.group(4)))
        for m in re.finditer(
            r"^\| (0-1|2-4|5-16|17\+) \| (\d+) \| (\d+) \| ([-0-9.]+) \|$", _readme_section(), re.M
        )
    }
    rate = saved.query(sample_out, "markup_leak_rate")
    assert rate["band"].to_list() == ["0-1", "2-4", "5-16", "17+"]
    for row in rate.iter_rows(named=True):
        n, k, r = want[row["band"]]
        assert (row["finished"], row["with_text"], row["leaks"]) == (n, n, k), row["band"]
        assert row["leak_rate"] == (None if r is None else pytest.approx(r, abs=5e-5)), row["band"]
    # issue 18: at 1 running request the rate is 0, over real answers (the quiet minutes' one-at-a-time
    # requests), not an empty band
    low = rate.filter(pl.col("band") == "0-1").row(0, named=True)
    assert (low["finished"], low["leaks"], low["leak_rate"]) == (want["0-1"][0], 0, 0.0) and low[
        "finished"
    ] == 8
    assert rate.filter(pl.col("band") == "2-4")["leak_rate"][0] == 0.0
    assert rate.filter(pl.col("band") == "17+")["leak_rate"][0] == pytest.approx(10 / 58)


def test_sample_receives_without_finish_and_counts(sample_out):
    section = _readme_section()

    def answer(q: str) -> str:
        return re.search(rf"^\| {re.escape(q)} \| (.+) \|$", section, re.M).group(1)

    counts = saved.query(
        sample_out,
        "SELECT count(*) FILTER (WHERE event = 'received') AS rec, count(*) FILTER (WHERE event = 'finished') AS fin,"
        " count(DISTINCT rid) FILTER (WHERE event = 'received' AND rid NOT IN"
        " (SELECT rid FROM request_log WHERE event = 'finished')) AS open FROM request_log",
    ).row(0, named=True)
    assert counts["rec"] == int(answer("`Receive` lines (decode main process, pids 2842 and 918234)")) == 502
    assert counts["fin"] == int(answer("`Finish` lines")) == 321
    assert counts["open"] == int(answer("`Receive` without a `Finish`").split(":")[0]) == 181
    # the room R's decode request was aborted: received, never finished
    r = saved.query(
        sample_out, "SELECT event FROM request_log WHERE rid = '541a919ceacb487a9390c077e63f2634'"
    )
    assert r["event"].to_list() == ["received"]


def _journal_json(lines: list[tuple[str, str, str]]) -> str:
    """A ``journalctl -o json`` capture: (ISO time, unit, message) per entry, one process per unit."""
    out = []
    for t, unit, msg in lines:
        us = int(datetime.fromisoformat(t).replace(tzinfo=UTC).timestamp() * 1e6)
        out.append(json.dumps({"__REALTIME_TIMESTAMP": str(us), "_HOSTNAME": "h1", "_BOOT_ID": "b" * 32,
                               "_SYSTEMD_UNIT": unit, "_PID": str(100 + len(unit)), "MESSAGE": msg}))  # fmt: skip
    return "\n".join(out) + "\n"


def _batch(dp: int, n: int) -> str:
    return (f"[2025-10-29 21:30:00 DP{dp} TP0] Decode batch, #running-req: {n}, #token: 9, token usage: 0.01, "
            "#prealloc-req: 0, #transfer-req: 0, cuda graph: True, gen throughput (token/s): 1.00, #queue-req: 0")  # fmt: skip


def _fin(rid: str, text: str) -> str:
    return (f"[2025-10-29 21:30:00] Finish: obj=GenerateReqInput(text='q', rid='{rid}'), out={{'text': {text!r}, "
            f"'meta_info': {{'id': '{rid}', 'finish_reason': {{'type': 'stop'}}, 'e2e_latency': 0.5}}}}")  # fmt: skip


def test_concurrency_sums_dp_groups_and_a_single_request_does_not_leak(tmp_path):
    d = "sglang-decode.service"
    capture = tmp_path / "capture.json"
    capture.write_text(
        _journal_json(
            [
                ("2025-10-29T21:30:00", d, _batch(0, 1)),
                ("2025-10-29T21:30:00.5", d, _fin("alone", "It is sunny.")),
                ("2025-10-29T21:30:01", d, _batch(0, 9)),
                ("2025-10-29T21:30:01.1", d, _batch(1, 10)),
                ("2025-10-29T21:30:01.2", d, _batch(1, 10)),  # a second TP rank of DP1: counted once
                ("2025-10-29T21:30:02", d, _fin("busy", "<｜DSML｜function_calls>")),
                ("2025-10-29T21:30:03", d, _fin("busy2", "fine")),
                ("2025-10-29T21:32:00", d, _fin("late", "<|tool▁sep|>")),  # 119 s after the last batch line
            ]
        )
    )
    out = tmp_path / "out"
    ingest([capture], out)
    conc = saved.query(out, "request_concurrency")
    assert conc.select("rid", "running_req", "dp_groups", "band").rows() == [
        ("alone", 1, 1, "0-1"), ("busy", 19, 2, "17+"), ("busy2", 19, 2, "17+"), ("late", None, 0, "unknown"),
    ]  # fmt: skip
    leaks = saved.query(out, "markup_leaks")
    assert leaks.select("rid", "running_req", "markup").rows() == [
        ("busy", 19, "<｜DSML｜function_calls"), ("late", None, "<|tool▁sep|>"),
    ]  # fmt: skip
    rate = {r["band"]: r for r in saved.query(out, "markup_leak_rate").iter_rows(named=True)}
    assert (rate["0-1"]["finished"], rate["0-1"]["leaks"], rate["0-1"]["leak_rate"]) == (1, 0, 0.0)
    assert (rate["17+"]["finished"], rate["17+"]["leaks"], rate["17+"]["leak_rate"]) == (2, 1, 0.5)
    assert (rate["unknown"]["leaks"], rate["2-4"]["finished"], rate["2-4"]["leak_rate"]) == (1, 0, None)
    con = saved.connect(out)
    con.execute("SET VARIABLE max_batch_age_s = 200")
    assert saved.query(out, "markup_leaks", con=con)["running_req"].to_list() == [19, 19]


def test_sample_report_has_the_markup_section_from_the_rows(sample_out):
    from logcorr.render.report import report

    text = report(sample_out)
    section = text.split("## Answers with tool-call markup (markup_leaks, markup_leak_rate)", 1)[1].split(
        "## Evidence"
    )[0]
    assert "decode on gpu-node-1: **12 of 321 answers**" in section
    assert "first 2025-10-29 21:27:17.744 UTC, last 2025-10-29 21:31:48.524 UTC" in section
    assert "markup deepseek_dsml (3), deepseek_tool_calls (9)" in section
    assert "None with 0-1 or 2-4 requests running." in section
    assert (
        "pid 2842: tool_call_parser, reasoning_parser, chat_template not named (cmdline); model "
        "/models/Llama-3.1-70B-Instruct; pid 918234: tool_call_parser=None, reasoning_parser=None, "
        "chat_template=None; model /models/Llama-3.1-70B-Instruct" in section
    )  # the first process's command line names none; the restarted one's server_args says None
    assert "Known issue F19" in section and "configuration against" in section  # a Llama engine: ruled out
    assert "| decode | 17+ | 58 | 58 | 10 | 0.172 |" in section
    assert "| 21:27:17.744 UTC | decode | 447e185e54944c4c9df82e6ddf9540c4 |" in section


def test_report_has_no_markup_section_without_leaks(tmp_path):
    log = tmp_path / "d.log"
    log.write_text(_fin("r1", "a plain answer") + "\n")
    out = tmp_path / "out"
    ingest([log], out)
    from logcorr.render.report import report

    assert "Answers with tool-call markup" not in report(out)


def test_timeline_marks_leaking_answers_on_their_engine_lane(sample_out):
    from logcorr.render import timeline

    sw = timeline.load(sample_out)
    marks = sw.marks.filter(pl.col("kind") == "markup_leak")
    assert marks.height == 12 and set(marks["role"]) == {"decode"}
    labels = dict(sw.lanes.select("lane", "label").iter_rows())
    assert {labels[lane] for lane in marks["lane"]} == {labels[marks["lane"][0]]}
    hover = timeline.mark_hover(sw, marks.head(1))[0]
    assert "answer with tool-call markup" in hover and "rid 447e185e54944c4c9df82e6ddf9540c4" in hover
    assert "&lt;|tool▁calls▁begin|&gt; · running requests 18" in hover
    _, meta = timeline.figure(sw)
    assert meta["counts"]["markup_leak"] == 12
