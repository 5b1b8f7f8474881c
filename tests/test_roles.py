"""The role rule (parsers/roles.py) is one rule: its Python and polars forms agree on every sample."""

from __future__ import annotations

import polars as pl
import pytest

from logcorr.parsers.roles import role_expr, role_from_text

SAMPLES = [
    ("sglang-prefill.service", "prefill"),
    ("qwen3-32b-sglang-2p2d-decode-0-1", "decode"),
    ("python3 -m sglang.launch_server --disaggregation-mode decode --tp 4", "decode"),
    ("python3 -m sglang.launch_server --disaggregation-mode=prefill", "prefill"),
    ("sglang::scheduler_TP0 disaggregation_mode='prefill'", "prefill"),  # by the word, not the flag
    ("/usr/bin/sgl-router --pd-disaggregation", "router"),
    ("smg.service", "router"),
    ("model-gateway-7f9c", "router"),
    ("Router-0", "router"),
    ("sglang-engine.service", None),
    ("", None),
]


@pytest.mark.parametrize("text,role", SAMPLES)
def test_python_and_polars_forms_agree(text, role):
    assert role_from_text(text) == role
    assert pl.select(role_expr(pl.lit(text))).item() == role


def _roles(text: str) -> list[tuple[str, str]]:
    from logcorr.ingest import records_from_text

    df = records_from_text(text, "paste.log")
    return [(r, m.split("\n")[0][:20]) for r, m in df.select("role", "message").iter_rows()]


def test_a_label_line_names_the_half_of_the_block_after_it():
    # batch6/03 (sglang#9582): the reporter's prose label, then the prefill worker's traceback
    text = (
        "prefill node throw exception:\n```\n"
        "[2025-08-24 20:28:03 DP0 TP0 EP0] TpModelWorkerClient hit an exception: Traceback (most recent call last):\n"
        '  File "/sgl-workspace/sglang/python/sglang/srt/managers/tp_worker_overlap_thread.py", line 141, in f\n'
    )
    assert ("prefill", "[2025-08-24 20:28:03") in _roles(text)


def test_a_label_ends_at_the_next_prose_line_and_never_beats_the_records_own_text():
    # batch4/06's shape: a prefill block, then prose introducing the router's block
    text = (
        "On the prefill side, I can see this error:\n```\n"
        "[2025-11-11 21:44:24 DP2 TP2 EP2] Scheduler hit an exception: boom\n```\n"
        "Meanwhile, the other side looks fine:\n```\n"
        "[2025-11-11 21:44:25 TP0] Decode batch. #running-req: 3, #token: 9, token usage: 0.00, "
        "pre-allocated usage: 0.00, #prealloc-req: 0, #transfer-req: 0, #retracted-req: 0, gen throughput "
        "(token/s): 1.0, #queue-req: 0,\n"
        '[2025-11-11 21:44:26] INFO:     127.0.0.1:5000 - "GET /health HTTP/1.1" 200 OK\n'
    )
    roles = dict((m, r) for r, m in _roles(text))
    assert roles["[2025-11-11 21:44:24"] == "prefill"
    assert roles["[2025-11-11 21:44:25"] == "decode"  # its own batch line says decode
    assert roles["Meanwhile, the other"] == "unknown"  # prose keeps no label's role


def test_an_sglang_paste_with_no_pd_cue_is_an_engine():
    # batch6/09 (sglang#4038): watchdog lines of TP ranks, nothing of prefill-decode anywhere
    text = (
        "".join(
            f"[2025-03-09 00:57:15 TP{r}] Watchdog timeout (self.watchdog_timeout=300)\n" for r in (4, 6, 1)
        )
        + "[2025-03-09 00:57:20] Received sigquit from a child proces. It usually means the child failed.\n"
    )
    assert {r for r, _ in _roles(text)} == {"engine"}


def test_a_pd_cue_keeps_an_sglang_paste_unnamed():
    text = (
        "[2025-03-09 00:57:15 TP4] Watchdog timeout (self.watchdog_timeout=300)\nwe run 1P1D with mooncake\n"
    )
    assert {r for r, _ in _roles(text)} == {"unknown"}


def test_the_ascend_transfer_engine_is_a_pd_cue():
    # batch5/03 (sglang#10748): the Ascend KV transfer backend exists only for prefill-decode
    text = (
        "2025-09-22 20:20:40.102376 error 12789 pid[12789] [ADAPTER pytransfer.cpp:49] Failed to init smem_trans\n"
        "[2025-09-22 20:20:40] Ascend Transfer Engine initialization failed.\n"
    )
    assert {r for r, _ in _roles(text)} == {"unknown"}


def test_a_paste_without_an_sglang_process_is_not_called_an_engine():
    # batch6/07's shape: a faulthandler dump of tqdm's monitor thread, nothing SGLang's
    text = (
        "Fatal Python error: Segmentation fault\n\n"
        "Thread 0x00007fbc4bfff640 (most recent call first):\n"
        '  File "/usr/lib/python3.10/threading.py", line 324 in wait\n'
    )
    assert {r for r, _ in _roles(text)} == {"unknown"}
