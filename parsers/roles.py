"""The role rule, written once: which role (``schema.ROLES``) a unit name, a command line or a process
title names. Used by the readers (unit choice), ingest (each record's role) and the py-spy parser
(a dump's process title), in Python and as a polars expression alike."""

from __future__ import annotations

import re

import polars as pl

# SGLang's flag, as argparse takes it (``--disaggregation-mode prefill``, ``=decode``) and as a
# process title or a repr prints it (``disaggregation_mode='prefill'``).
MODE = r"--disaggregation[-_]mode(?:=|\s+)['\"]?(prefill|decode)\b"
# A router's binary or module: sgl-router, sglang_router, sgl-model-gateway, smg, mini_lb.
ROUTER_PROCESS = r"sglang_router|sgl-router|sgl_router|model[-_]gateway|\bsmg\b|mini_lb"
# Words in a unit, pod or service name, first match wins.
NAME_WORDS = (("prefill", "prefill"), ("decode", "decode"), ("router", "router"), ("gateway", "router"))


def role_from_text(text: str | None) -> str | None:
    """The role ``text`` (a unit name, a command line, a process title) names: the
    ``--disaggregation-mode`` it passes, else ``router`` for a router's binary, else the first of
    ``NAME_WORDS`` in it (any case); None when it names none."""
    if not text:
        return None
    m = re.search(MODE, text)
    if m:
        return m.group(1)
    if re.search(ROUTER_PROCESS, text):
        return "router"
    low = text.lower()
    return next((role for word, role in NAME_WORDS if word in low), None)


def role_expr(text: pl.Expr) -> pl.Expr:
    """``role_from_text`` over a column of text (null where it names none)."""
    by_words = pl.lit(None, pl.String)
    for word, role in reversed(NAME_WORDS):
        by_words = pl.when(text.str.contains(f"(?i){word}")).then(pl.lit(role)).otherwise(by_words)
    return pl.coalesce(
        text.str.extract(MODE, 1),
        pl.when(text.str.contains(ROUTER_PROCESS)).then(pl.lit("router")),
        by_words,
    )


def mode_expr(text: pl.Expr) -> pl.Expr:
    """Only the ``--disaggregation-mode`` a command line passes (its other words name no role)."""
    return text.str.extract(MODE, 1)
