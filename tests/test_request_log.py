"""``request_log``: SGLang's ``--log-requests`` lines (text repr and JSON forms) read by key, and the
tool-call markup families found in the returned text (parsers/sglang.py, research notes 5 and F19)."""

from __future__ import annotations

import json

import polars as pl
import pytest

from logcorr.ingest import records_from_text
from logcorr.parsers import sglang
from tests.conftest import CASES


def rows(text: str) -> list[dict]:
    return sglang.request_log(records_from_text(text, "test.log")).to_dicts()


def finish(out: str, obj: str = "GenerateReqInput(text='Hi', rid='r1', bootstrap_room=7)") -> str:
    """A text-form ``Finish`` line as SGLang's request logger writes it."""
    return f"[2025-10-29 21:30:02] Finish: obj={obj}, out={out}"


META = "'meta_info': {'id': 'r1', 'finish_reason': {'type': 'stop', 'matched': 151336}, 'prompt_tokens': 12, 'completion_tokens': 5, 'cached_tokens': 0, 'e2e_latency': 0.42}"


@pytest.mark.parametrize("family", sglang.MARKUP_FAMILIES, ids=lambda m: m.name)
def test_every_markup_family_sample_is_found(family):
    assert sglang.find_markup(family.sample)[0] == family.name


@pytest.mark.parametrize(
    "text,family,token",
    [
        ("<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f", "deepseek_tool_calls", "<｜tool▁calls▁begin｜>"),
        ("ok <|tool▁calls▁begin|>", "deepseek_tool_calls", "<|tool▁calls▁begin|>"),  # ASCII bar
        ("<｜｜tool▁call▁begin｜｜>", "deepseek_tool_calls", "<｜｜tool▁call▁begin｜｜>"),  # doubled
        ("x <tool▁sep>", None, None),
        ("<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"f\">", "deepseek_dsml", "<｜DSML｜function_calls"),
        ("text </|DSML|invoke>", "deepseek_dsml", "</|DSML|invoke"),
        ("<｜DSML｜tool_calls>", "deepseek_dsml", "<｜DSML｜tool_calls"),
        ("a plain answer about pipes | and DSML", None, None),
        ("", None, None),
        (None, None, None),
    ],
)
def test_find_markup_variants(text, family, token):
    assert sglang.find_markup(text) == (family, token)


def test_real_finish_line_of_an_aborted_request():
    path = CASES / "real2" / "05_tsv_export_cp_pp_finish_abort_prefill_batches.log"
    if not path.exists():
        pytest.skip("real2 case missing")
    got = rows(path.read_text())
    assert len(got) == 1
    r = got[0]
    assert (r["event"], r["format"], r["rid"], r["bootstrap_room"]) == (
        "finished", "text", "bf890d9ca8ce4008bef7ef25d97f8fba", None
    )
    assert (r["finish_type"], r["finish_message"], r["status_code"]) == (
        "abort", "Request running timeout reached.", 503
    )
    assert (r["prompt_tokens"], r["completion_tokens"], r["cached_tokens"]) == (32472, 23297, 32320)
    assert r["e2e_latency_s"] == pytest.approx(1201.9242150001228)
    # level 1: no text in out, so no leak can be claimed
    assert (r["output_text"], r["output_chars"], r["output_cut"], r["markup_leak"]) == (None, None, None, None)


def test_leak_found_in_the_returned_text_only_never_in_the_prompt():
    prompt = "GenerateReqInput(text='<｜tool▁calls▁begin｜> earlier turn; fake: , out={\\'text\\': \\'<｜DSML｜x\\'}', rid='r1', bootstrap_room=7)"
    out = "{'text': 'Calling <｜DSML｜function_calls>\\n<｜DSML｜invoke name=\"get\">', 'output_ids': [1, 2], " + META + "}"
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
    assert (r["finish_type"], r["prompt_tokens"], r["cached_tokens"], r["e2e_latency_s"]) == ("length", 3, None, 0.15)
    assert r["output_text"] == "it's <|tool▁sep|>" and r["markup_leak"] == "deepseek_tool_calls"


def test_a_text_cut_at_2kb_is_head_and_tail_and_the_cut_makes_no_leak():
    head, tail = "a" * 1020 + "<｜tool", "▁calls▁begin｜>" + "b" * 1010  # a marker split by the cut
    out = "{'text': " + repr(head) + " ... " + repr(tail) + ", " + META + "}"
    (r,) = rows(finish(out))
    assert r["output_cut"] is True and r["markup_leak"] is None
    assert r["output_chars"] == len(head) + len(tail)
    assert r["output_text"] == (head + " ... " + tail)[: sglang.REQUEST_TEXT_CHARS]
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
            json.dumps({"timestamp": "2025-10-29T21:30:01", "event": "request.received", "rid": "j1",
                        "obj": {"rid": "j1", "bootstrap_room": 9}}),
            json.dumps({"timestamp": "2025-10-29T21:30:01", "event": "request.received.openai", "rid": "j1",
                        "obj": {"rid": "j1"}}),
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
    assert (r["prompt_tokens"], r["completion_tokens"], r["cached_tokens"], r["e2e_latency_s"]) == (7, 2048, 1, 3.25)
    assert r["output_cut"] is True and r["output_chars"] == 2048
    assert r["markup_leak"] == "deepseek_tool_calls"
    line["out"]["text"] = "fine"
    del line["out"]["meta_info"]["finish_reason"]["message"]
    (r,) = rows(json.dumps(line))
    assert (r["output_cut"], r["markup_leak"], r["output_text"], r["finish_message"]) == (False, None, "fine", None)


def test_other_records_give_no_rows_and_an_empty_frame_has_the_contract():
    assert rows("[2025-10-29 21:30:00 TP0] Decode batch, #running-req: 3, #token: 9, token usage: 0.01") == []
    empty = sglang.request_log(pl.DataFrame({"body": [], "message": []}, schema={"body": pl.String, "message": pl.String}))
    assert empty.height == 0 and list(empty.columns) == list(sglang.REQUEST_LOG.schema)
