"""The steps of a ``logcorr collect`` bundle (and the answers of SGLang's incident bundle) → typed ``probes`` rows.

A bundle's ``manifest.json`` lists each step the collector took (an endpoint asked, a py-spy dump, the
journal saved, a tool run). ``logcorr.inputs.bundle`` makes one record of each, whose text is
``STEP_LINE`` (written by ``step_line``, so the format is in one place); ``probes`` reads those
records back into the table. The format is logcorr's own (``logcorr collect`` 0.1 and later).
"""

from __future__ import annotations

import polars as pl

from logcorr.store.schema import PROBES

from .rules import LinePattern

UNIT = "logcorr-collect"  # the unit of a step's record: what tells it from any process's line
STEP_LINE = LinePattern(
    name="collect_step",
    kind="other",
    anchor="logcorr collect: ",
    regex=(
        r"^(?:logcorr collect|sglang incident bundle): (?P<step>\w+)(?: round (?P<round_no>\d+))?(?: pid (?P<pid>\d+))?: "
        r"(?:status (?P<status>-?\d+)|no answer|not run)(?: in (?P<latency_ms>\d+(?:\.\d+)?) ms)?, "
        r"(?P<bytes>\d+) bytes: (?P<target>.*?)(?: \| error: (?P<error>.*?))?(?: \| fix: (?P<fix>.*))?$"
    ),
    since="logcorr collect 0.1",
    sample=(
        "logcorr collect: pyspy round 2 pid 4711: status 1 in 12.5 ms, 0 bytes: sglang::scheduler_TP1"
        " | error: Permission denied (os error 13) | fix: run as root or with CAP_SYS_PTRACE"
    ),
    yields={
        "step": "pyspy",
        "round_no": 2,
        "pid": 4711,
        "status": 1,
        "latency_ms": 12.5,
        "bytes": 0,
        "target": "sglang::scheduler_TP1",
        "error": "Permission denied (os error 13)",
        "fix": "run as root or with CAP_SYS_PTRACE",
    },
)


def step_line(artifact: dict, tool: str = "logcorr collect", timed: bool = True) -> str:
    """The ``STEP_LINE`` text of one manifest artifact (``logcorr.collect`` writes them; ``tool`` names
    another collector, such as SGLang's incident bundle): its kind, round and pid (py-spy), HTTP or exit
    status (``no answer`` when none, ``not run`` when the budget was spent), duration (ms; left out when
    the collector did not time it, ``timed=False``), bytes, the URL, process title or command, the
    error and the fix."""
    step = artifact.get("kind") or "step"
    head = f"{tool}: {step}"
    head += f" round {artifact['round']}" if artifact.get("round") is not None else ""
    head += f" pid {artifact['pid']}" if artifact.get("pid") is not None else ""
    status = artifact.get("status", artifact.get("exit"))
    error = artifact.get("error") or ""
    said = (
        f"status {status}"
        if status is not None
        else "not run"
        if error.startswith("not run")
        else "no answer"
    )
    ms = artifact.get("latency_ms", artifact.get("duration_ms")) or 0
    command = artifact.get("command")
    target = artifact.get("url") or artifact.get("title") or (" ".join(command) if command else step)
    took = f" in {float(ms):.3f} ms" if timed else ""
    text = f"{head}: {said}{took}, {int(artifact.get('bytes') or 0)} bytes: {target}"
    text += f" | error: {error}" if error else ""
    text += f" | fix: {artifact['fix']}" if artifact.get("fix") else ""
    return " ".join(text.split("\n"))


def probes(ev: pl.DataFrame) -> pl.DataFrame:
    """``PROBES`` rows of the step records among ``ev`` (``events`` columns plus ``body``): those of
    unit ``UNIT`` whose text is a ``STEP_LINE``; empty otherwise. Never raises."""
    if "unit" not in ev.columns or ev.height == 0:
        return pl.DataFrame(schema=PROBES.schema)
    steps = ev.filter(
        (pl.col("unit") == UNIT)
        & pl.col("message").str.contains(r"^(?:logcorr collect|sglang incident bundle): ")
    )
    if steps.height == 0:
        return pl.DataFrame(schema=PROBES.schema)
    fields = steps.select(pl.col("message").str.extract_groups(STEP_LINE.regex).alias("f")).unnest("f")
    rows = pl.concat(
        [steps.select("event_id", "ts", "host", "source", "source_pos"), fields], how="horizontal"
    )
    rows = rows.with_columns(pl.col(c).replace("", None) for c in ("error", "fix"))
    return rows.filter(pl.col("step").is_not_null()).select(
        pl.col(c).cast(t, strict=False).alias(c) for c, t in PROBES.schema.items()
    )
