"""Router and HTTP access lines (parsers/router.py): every format's sample, the PD messages, the
sgl-router and sgl-model-gateway latency forms, JSON mode, mini_lb registration, and kinds."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from logcorr.ingest import records_from_text
from logcorr.parsers import router, sglang
from logcorr.store.schema import REQUESTS as REQUESTS_TABLE

CASES = Path(__file__).parent / "cases"


def without_notes(text: str) -> str:
    """A case file's text without the ``#`` note lines at its top (``# source: URL``): the log itself."""
    lines = text.splitlines(keepends=True)
    while lines and lines[0].startswith("#"):
        lines.pop(0)
    return "".join(lines)


def ev_of(text: str, role: str = "unknown") -> pl.DataFrame:
    return records_from_text(text, "router.log").with_columns(pl.lit(role).alias("role"))


def one(text: str, role: str = "unknown") -> dict:
    req = router.requests(ev_of(text, role))
    assert req.height == 1, req
    return req.row(0, named=True)


@pytest.mark.parametrize("fmt", router.ACCESS_FORMATS + router.ROUTER_FORMATS, ids=lambda f: f.name)
def test_every_format_sample_parses(fmt):
    row = one(fmt.sample)
    assert row["format"] == fmt.name and fmt.since
    for column, value in fmt.yields.items():
        assert row[column] == pytest.approx(value) if isinstance(value, float) else row[column] == value, (
            column
        )
    kind = sglang.classify(ev_of(fmt.sample))["kind"][0]
    assert kind in ("request", "health")


@pytest.mark.parametrize("rule", router.SPAN_FIELDS + router.MESSAGE_FIELDS, ids=lambda r: r.name)
def test_every_field_rule_sample_yields_its_fields(rule):
    frame = pl.DataFrame({"body": [""], f"_{rule.scope}": [rule.sample]})
    got = sglang.extract_fields(frame, [rule], REQUESTS_TABLE).row(0, named=True)
    assert rule.since and rule.yields and rule.scope in ("spans", "message")
    for column, value in rule.yields.items():
        if column in re.findall(r"\(\?P<(\w+)>", rule.regex):
            assert got[column] == value, (rule.name, column)


# The router messages that name a request's PD pair (the prefill/decode URL columns are filled from them).
PD_MESSAGES = [r for r in router.MESSAGE_FIELDS if {"prefill_url", "decode_url"} & set(r.yields)]


@pytest.mark.parametrize("rule", PD_MESSAGES, ids=lambda r: r.name)
def test_pd_messages_name_the_pair(rule):
    row = one(
        f"2026-02-26 13:00:12 ERROR smg::routers::http::pd_router: src/routers/http/pd_router.rs:590: {rule.sample}"
    )
    urls = {u for u in (row["prefill_url"], row["decode_url"]) if u}
    assert urls and all(u.startswith("http://10.") and not u.endswith(":") for u in urls), rule.name
    assert row["role"] == "router"
    for column, value in rule.yields.items():  # a whole line yields every field its message names
        assert row[column] == value, (rule.name, column)


def test_uvicorn_access_with_and_without_header():
    a = one('[2025-11-05 16:38:04] INFO:     127.0.0.1:32770 - "GET /health HTTP/1.1" 200 OK')
    b = one('INFO:     10.0.0.3:5000 - "POST /v1/chat/completions HTTP/1.1" 503 Service Unavailable')
    assert (a["method"], a["path"], a["status"], a["client"], a["level"]) == (
        "GET",
        "/health",
        200,
        "127.0.0.1:32770",
        "INFO",
    )
    assert a["ts"] == datetime(2025, 11, 5, 16, 38, 4, tzinfo=UTC)
    assert (b["method"], b["path"], b["status"], b["ts"]) == ("POST", "/v1/chat/completions", 503, None)
    assert a["role"] == "unknown"  # both engines and the mini_lb serve HTTP: no role from the line


def test_smg_span_status_and_integer_latency_in_microseconds():
    row = one(router.ROUTER_TEXT.sample)
    assert (row["method"], row["path"], row["status"], row["request_id"]) == (
        "POST",
        "/v1/chat/completions",
        500,
        "chatcmpl-Wly2zVLtUcyK1Vg13jmipvFZ",
    )
    assert row["latency_ms"] == pytest.approx(1254.651)
    assert (row["target"], row["level"], row["message"]) == (
        "smg::response",
        "ERROR",
        "request failed with server error",
    )
    assert row["ts"] == datetime(2026, 2, 26, 13, 0, 13, tzinfo=UTC)


@pytest.mark.parametrize(
    "latency,ms",
    [('"12.345ms"', 12.345), ('"1.5s"', 1500.0), ('"850µs"', 0.85), ('"900ns"', 0.0009), ("2500", 2.5)],
)
def test_sgl_router_duration_latency(latency, ms):
    line = (
        f'2025-10-29 21:49:20  INFO http_request{{method=GET uri=/health version=HTTP/1.1 request_id="r-1"'
        f" status_code=200 latency={latency}}}: sglang_router_rs::response: src/middleware.rs:240:"
        " finished processing request"
    )
    row = one(line)
    assert row["latency_ms"] == pytest.approx(ms) and row["status"] == 200
    assert sglang.classify(ev_of(line))["kind"].to_list() == ["health"]


def test_router_line_without_span_or_file():
    ev = ev_of(
        "2025-10-29 21:49:19  WARN sglang_router_rs::core::worker: Worker http://10.0.0.7:30000 is unhealthy"
    )
    row = ev.row(0, named=True)  # a router line that is no request: an event, not a requests row
    assert (row["kind"], row["level"], row["header"]) == ("other", "WARNING", "router")
    assert (
        row["body"].startswith("sglang_router_rs::core::worker: Worker") and router.requests(ev).height == 0
    )


def test_router_lines_that_are_not_requests_are_other():
    ev = ev_of(
        "2026-02-26 13:00:07  INFO smg::workflow::event: /home/runner/work/sglang/sglang/src/workflow/event.rs:208:"
        " Step started instance_id=a6e4 step_id=register_workers attempt=1"
    )
    c = sglang.classify(ev)
    assert c.select("kind", "content_role").rows() == [("other", "router")]
    assert router.requests(ev.with_columns(c["kind"])).height == 0


def test_ansi_coloured_router_line():
    line = (
        "\x1b[2m2025-10-29 21:49:19\x1b[0m \x1b[31mERROR\x1b[0m \x1b[1mhttp_request\x1b[0m{method=POST uri=/generate"
        ' version=HTTP/1.1 request_id="gnt-1"}: sglang_router_rs::routers::http::pd_router:'
        " src/routers/http/pd_router.rs:142: Failed to select PD pair"
    )
    row = one(line)
    assert (row["level"], row["method"], row["request_id"], row["role"]) == (
        "ERROR",
        "POST",
        "gnt-1",
        "router",
    )


def test_json_mode_line_gets_time_and_level_from_its_keys():
    line = (
        '{"timestamp":"2025-10-29 21:49:20","level":"WARN","fields":{"message":"Decode server returned error status'
        ' decode_url=http://10.0.0.8:30001 status=502 Bad Gateway"},"target":"sglang_router_rs::routers::http::pd_router",'
        '"span":{"method":"POST","request_id":"gnt-9","uri":"/generate","name":"http_request"}}'
    )
    row = one(line)
    assert (row["format"], row["level"], row["status"], row["decode_url"]) == (
        "router_json",
        "WARNING",
        502,
        "http://10.0.0.8:30001",
    )
    assert (row["method"], row["path"], row["request_id"]) == ("POST", "/generate", "gnt-9")
    assert row["ts"] == datetime(2025, 10, 29, 21, 49, 20, tzinfo=UTC)


def test_mini_lb_registration():
    a = one(
        "[2025-05-01 10:00:00] Registered prefill server: http://10.0.0.7:30000 with bootstrap port: 8998"
    )
    b = one("[2025-05-01 10:00:01] Registered decode server: http://10.0.0.8:30001")
    assert (a["prefill_url"], a["bootstrap_port"], a["role"]) == ("http://10.0.0.7:30000", 8998, "router")
    assert (b["decode_url"], b["prefill_url"], b["bootstrap_port"]) == ("http://10.0.0.8:30001", None, None)


def test_source_role_wins():
    assert one(router.ROUTER_TEXT.sample, role="decode")["role"] == "decode"


def test_kind_column_filters_rows():
    ev = ev_of('[2025-11-05 16:38:04] INFO:     127.0.0.1:32770 - "GET /health HTTP/1.1" 200 OK')
    assert router.requests(ev.with_columns(pl.lit("other").alias("kind"))).height == 0
    assert router.requests(ev.with_columns(pl.lit("health").alias("kind"))).height == 1


def test_cases_access_and_router_lines():
    root = CASES / "sglang"
    if not root.exists():
        pytest.skip("shared/cases not found")
    req = router.requests(
        records_from_text(without_notes((root / "12_router_span_request_id_error.log").read_text()), "12")
    )
    assert req.select("level", "method", "path", "request_id").rows() == [
        ("ERROR", "POST", "/generate", "gnt-T1DkMPsWX1SOfuePNC4g04oV")
    ]
    req = router.requests(
        records_from_text(without_notes((root / "15_npu_prefill_decode_batch_tp_ep.log").read_text()), "15")
    )
    assert req.select("method", "path", "status").rows() == [("POST", "/generate", 200)] * 4


def test_empty_and_schema():
    empty = pl.DataFrame(schema={"event_id": pl.Int64, "body": pl.String, "message": pl.String})
    assert router.requests(empty).schema == pl.Schema(router.REQUESTS)
    assert router.requests(ev_of("no request here")).schema == pl.Schema(router.REQUESTS)
    assert router.kinds(empty).height == 0


@pytest.mark.heavy  # a fault test: a generated loop of minutes of CPU (CI runs -m heavy)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.text(max_size=120)
        | st.sampled_from([f.sample for f in router.ACCESS_FORMATS + router.ROUTER_FORMATS]),
        min_size=1,
        max_size=5,
    )
)
def test_never_raises(texts):
    ev = pl.concat([records_from_text(t, "fuzz") for t in texts])
    out = router.requests(ev)
    assert out.schema == pl.Schema(router.REQUESTS)
    assert router.kinds(ev).height == ev.height
