"""Request ids of other components and KV-connector failures in other engines' words (issue 45 item 5,
batch7 cause F): SGLang's rid holds SGLang's ids only; vLLM's, Dynamo's and a KV connector's ids go to
``request_id``; vLLM's NixlConnector failure with its Context dict is a transfer_errors row; a Mooncake
RDMA endpoint's glog error is a transfer-backend finding. Each case file read as the evaluation read it
(its ``# source``/``# note`` lines off)."""

from __future__ import annotations

import polars as pl
import pytest

from logcorr.analysis import saved
from logcorr.ingest import ingest, records_from_text
from logcorr.render.report import report
from tests.test_batch7 import body


@pytest.mark.parametrize(
    ("prefix", "line", "request_id"),
    [
        ("12", "line 17", "f7c448ac77c14b02a62a9ffbced052a1"),  # Dynamo: Error processing request …
        ("14", "line 7", "ae6b8d99-5ac2-4af5-a1f4-c582fc3a8a26-83d1d9cd"),  # NIXL Context 'request_id'
        ("17", "line 5", "chatcmpl-7817d6df-206c-4aca-bfac-c43df205506f"),  # vLLM's scheduler, id first
        ("20", "line 4", "Dequeued prefill request: 796460ab-e3ce-45d4-bb3e-d18309750355"),
    ],
)
def test_another_components_request_id_is_request_id_never_rid(prefix, line, request_id):
    ev = records_from_text(body(prefix), f"{prefix}.log")
    want = request_id.rsplit(" ", 1)[-1]
    named = ev.filter(pl.col("request_id") == want)
    assert line in named["source_pos"].to_list()
    assert ev["rid"].null_count() == ev.height  # none of them is SGLang's


def test_an_sglang_format_record_keeps_the_id_after_request_as_its_rid():
    """An SGLang fork's OpenAI layer passes its request id on as the rid (batch3/04's shape)."""
    text = (
        "[2026-07-21 08:04:41] Processing ChatCompletion request a04107cc-ff53-49ba-b428-03eb77df5cd5 from x\n"
        "2026-07-21T08:04:42.000001Z ERROR worker.generate: Error processing request a04107cc-ff53-49ba-b428-03eb77df5cd5\n"
    )
    ev = records_from_text(text, "ids.log")
    assert ev.select("rid", "request_id").rows() == [
        ("a04107cc-ff53-49ba-b428-03eb77df5cd5", None),
        (None, "a04107cc-ff53-49ba-b428-03eb77df5cd5"),
    ]


def test_vllm_nixl_transfer_failures_are_transfer_errors_rows_of_decode(tmp_path):
    rows = {}
    for p in ("14", "15"):
        log = tmp_path / f"{p}.log"
        log.write_text(body(p))
        ingest([log], tmp_path / p)
        rows[p] = saved.query(
            tmp_path / p,
            "SELECT role, tp_rank, ep_rank, request_id, error_kind, cause, backend, peer, reason FROM transfer_errors",
        ).rows()
    assert rows["14"] == [
        (
            "decode", None, None, "ae6b8d99-5ac2-4af5-a1f4-c582fc3a8a26-83d1d9cd", "nixl_transfer_failure",
            "transfer_exception", "nixl", "10.0.7.3:20098", "transfer_exception. Marking blocks as invalid",
        )
    ]  # fmt: skip
    assert rows["15"] == [
        (
            "decode", 0, 0, None, "nixl_transfer_failure", "handshake_setup_failed", "nixl", None,
            "handshake_setup_failed; remote engine b6b76ae8-5a6c-4104-bb1d-4966a7cb9e8c",
        )
    ]  # fmt: skip
    # 14: the typed failure leads, with its request and peer, over NIXL's telemetry line printed beside it
    summary = report(tmp_path / "14").split("## Summary", 1)[1].split("\n## ", 1)[0]
    assert '1 "NIXL transfer failure" record(s) on decode' in summary
    assert "request ae6b8d99-5ac2-4af5-a1f4-c582fc3a8a26-83d1d9cd, peer 10.0.7.3:20098" in summary
    assert "printed without a year: 07-30 15:51:33" in summary


def test_a_mooncake_rdma_endpoint_error_is_a_transfer_backend_finding(tmp_path):
    log = tmp_path / "10.log"
    log.write_text(body("10"))
    ingest([log], tmp_path / "10")
    found = saved.query(
        tmp_path / "10", "SELECT kind, summary FROM findings WHERE kind = 'transfer_failures'"
    )
    assert found.height == 1
    summary = found["summary"][0]
    assert "printed without a year: 03-31 12:03:04.222625" in summary and "backend mooncake" in summary
    assert "Failed to modify QP to RTR" in summary
