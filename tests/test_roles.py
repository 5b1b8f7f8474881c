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
