"""systemd's own messages about a unit → typed ``lifecycle`` rows (start, stop, exit, restart, crash loop),
and the engine's HTTP server's own start and stop lines (uvicorn's) in the same table.

systemd (PID 1, or the user manager) logs these about every unit it runs; journald tags them with
``UNIT=`` (read as the record's unit) and they reach text captures as ``systemd[1]: …`` lines.
Wordings of systemd 245-256: since v250 ``Started``/``Stopped`` name the unit before its
description (``Started sglang-decode.service - SGLang decode engine.``), before that only the
description; v256 adds the memory peak to ``Consumed … CPU time``. Each pattern is data with a
sample a test parses (tests/test_systemd.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from logcorr.store.schema import LIFECYCLE

_UNIT = r"(?P<unit>[\w@:.\\-]+\.(?:service|scope|socket|target|timer|mount))"


@dataclass(frozen=True)
class UnitMessage:
    """One systemd message shape: ``event`` is the ``lifecycle.event`` it yields; ``anchor`` a
    literal every match contains (the engine finds records by it); ``regex`` confirms and names the
    fields (``unit``, ``code``, ``status``, ``result``, ``counter``, ``cpu``, ``memory``)."""

    event: str
    anchor: str
    regex: str
    sample: str


M = UnitMessage
UNIT_MESSAGES = [
    M(
        "starting",
        "Starting ",
        rf"^Starting (?:{_UNIT} - )?[^\n]*\.\.\.$",
        "Starting sglang-decode.service - SGLang decode...",
    ),
    M(
        "started",
        "Started ",
        rf"^Started (?:{_UNIT} - )?[^\n]*\.$",
        "Started sglang-decode.service - SGLang decode engine.",
    ),
    M(
        "stopping",
        "Stopping ",
        rf"^Stopping (?:{_UNIT} - )?[^\n]*\.\.\.$",
        "Stopping sglang-decode.service - SGLang decode...",
    ),
    M(
        "stopped",
        "Stopped ",
        rf"^Stopped (?:{_UNIT} - )?[^\n]*\.$",
        "Stopped sglang-decode.service - SGLang decode engine.",
    ),
    M(
        "exited",
        "Main process exited, code=",
        rf"^(?:{_UNIT}: )?Main process exited, code=(?P<code>\w+), status=(?P<status>[\w/-]+)",
        "sglang-decode.service: Main process exited, code=killed, status=9/KILL",
    ),
    M(
        "failed",
        "Failed with result '",
        rf"^(?:{_UNIT}: )?Failed with result '(?P<result>[\w-]+)'",
        "sglang-decode.service: Failed with result 'exit-code'.",
    ),
    M(
        "start_failed",
        "Failed to start ",
        rf"^Failed to start (?:{_UNIT} - )?[^\n]*\.$",
        "Failed to start sglang-decode.service - SGLang decode engine.",
    ),
    M(
        "restart_scheduled",
        "Scheduled restart job, restart counter is at ",
        rf"^(?:{_UNIT}: )?Scheduled restart job, restart counter is at (?P<counter>\d+)",
        "sglang-decode.service: Scheduled restart job, restart counter is at 3.",
    ),
    M(
        "consumed",
        " CPU time",
        rf"^(?:{_UNIT}: )?Consumed (?P<cpu>[\dhmins. ]+?) CPU time(?:, (?P<memory>[\d.]+[KMGT]?B?) memory peak)?",
        "sglang-prefill.service: Consumed 11h 2min 48.117s CPU time, 12.3G memory peak.",
    ),
    M(
        "deactivated",
        "Deactivated successfully",
        rf"^(?:{_UNIT}: )?Deactivated successfully",
        "sglang-decode.service: Deactivated successfully.",
    ),
]
# The engine's own HTTP server (uvicorn, which SGLang's runs) saying it starts or stops: in container
# logs, which hold no systemd message, the only words of a restart beside the new run's first line.
SERVER_MESSAGES = [
    M(
        "server_stopping",
        "Shutting down",
        r"^(?:INFO: +)?Shutting down$",
        "INFO:     Shutting down",
    ),
    M(
        "server_stopped",
        "server process [",
        r"^(?:INFO: +)?Finished server process \[(?P<pid>\d+)\]$",
        "INFO:     Finished server process [2842]",
    ),
    M(
        "server_started",
        "server process [",  # not "Started …": systemd's anchor "Started " would claim the line first
        r"^(?:INFO: +)?Started server process \[(?P<pid>\d+)\]$",
        "INFO:     Started server process [918234]",
    ),
]
# The engine's own word that it stops: SGLang's tokenizer manager on SIGTERM (also behind Dynamo's handler
# name, tokenizer_manager.sigterm_handler): it drains the running requests and shuts down.
ENGINE_MESSAGES = [
    M(
        "server_stopping",
        "SIGTERM received",
        r"SIGTERM received\.[^\n]*?[Ss]hutting down",
        "SIGTERM received. signum=None frame=None. Draining requests and shutting down...",
    ),
]
# The shell's word on a child it ran that SIGKILL ended (the kernel's OOM killer, `kill -9`): bash's bare
# "Killed" after the program's output, a script's "./entrypoint.sh: line 48: 27 Killed python3 -m
# sglang.launch_server …" (job number, command), the same word in a Chinese locale, "已杀死" (sglang#2468,
# #5095, #16855: batch23/09, 01, 02; batch6/09). The process exited, killed: its status is "killed".
SHELL_MESSAGES = [
    M(
        "exited",
        "Killed",
        r"^(?:\S+: line \d+: +)?(?:\d+ )?Killed(?:\s+\S[^\n]*)?$",
        "./entrypoint.sh: line 48: 27 Killed python3",
    ),
    M("exited", "已杀死", r"^已杀死\s*$", "已杀死"),
]
SHELL_KILLED = "|".join(m.regex for m in SHELL_MESSAGES)
MESSAGES = UNIT_MESSAGES + SERVER_MESSAGES + ENGINE_MESSAGES + SHELL_MESSAGES
# systemd's wordings any program may print too ("Starting initial single prompt test run..."): without a
# unit named in them they are systemd's only on a record that systemd or a unit's journal gave
PLAIN_WORDING = "|".join(
    f"(?:{m.regex.replace('(?P<unit>', '(')})"
    for m in UNIT_MESSAGES
    if m.event in ("starting", "started", "stopping", "stopped", "start_failed")
)
# The unit a message names, where it names one (group 1).
NAMED_UNIT = (
    rf"^(?:(?:Starting|Started|Stopping|Stopped|Failed to start) )?{_UNIT.replace('(?P<unit>', '(')}(?::| - )"
)
_SIZE = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def _seconds(text: pl.Expr) -> pl.Expr:
    """``11h 2min 48.117s`` / ``1.234s`` / ``350ms`` → seconds (Float64)."""

    def part(unit: str) -> pl.Expr:
        return text.str.extract(rf"([\d.]+){unit}\b", 1).cast(pl.Float64, strict=False).fill_null(0.0)

    return (part("h") * 3600 + part("min") * 60 + part("s") + part("ms") / 1000).alias("cpu_s")


def lifecycle(ev: pl.DataFrame) -> pl.DataFrame:
    """One row per systemd message about a unit, or the engine's HTTP server starting or stopping, typed.

    Args:
        ev: the ``ev`` frame of a chunk (``events`` columns plus ``body``); with a ``kind`` column
            only ``lifecycle`` rows are read.

    Returns:
        ``LIFECYCLE`` columns: provenance (``event_id, ts, host, boot_id``), ``unit`` (named by the
        message, else the record's unit: journald's ``UNIT=``), ``role``, ``event`` (``starting``,
        ``started``, ``stopping``, ``stopped``, ``exited``, ``failed``, ``start_failed``,
        ``restart_scheduled``, ``consumed``, ``deactivated``; the server's own ``server_started``,
        ``server_stopping``, ``server_stopped`` of uvicorn ≥ 0.11; ``server_stopping`` also for SGLang's
        ``SIGTERM received … shutting down``; ``exited`` with status ``killed`` for the shell's word on a child
        SIGKILL ended, ``Killed``), ``code`` and ``status`` of an exit
        (``killed``, ``9/KILL``), ``result`` (``exit-code``, ``signal``, ``timeout``, ``core-dump``),
        ``restart_counter``, ``cpu_s`` (seconds), ``memory_peak_bytes``, ``message``, ``source``,
        ``source_pos``. Never raises.
    """
    if "kind" in ev.columns:
        ev = ev.filter(pl.col("kind") == "lifecycle")
    if ev.height == 0:
        return pl.DataFrame(schema=LIFECYCLE.schema)
    body = pl.col("body").fill_null("")
    event = pl.coalesce([pl.when(body.str.contains(m.regex)).then(pl.lit(m.event)) for m in MESSAGES])

    def field(name: str) -> pl.Expr:  # the first message shape that names it
        return pl.coalesce(
            [
                body.str.extract_groups(m.regex).struct.field(name)
                for m in UNIT_MESSAGES
                if f"<{name}>" in m.regex
            ]
        )

    memory = field("memory").str.extract_groups(r"^(?P<n>[\d.]+)(?P<u>[KMGT]?)")
    df = ev.with_columns(
        event.alias("event"),
        pl.coalesce(field("unit"), pl.col("unit")).alias("unit"),
        field("code").alias("code"),
        pl.coalesce(field("status"), pl.when(body.str.contains(SHELL_KILLED)).then(pl.lit("killed"))).alias(
            "status"
        ),
        field("result").alias("result"),
        field("counter").cast(pl.Int32, strict=False).alias("restart_counter"),
        pl.when(event == "consumed").then(_seconds(field("cpu"))).alias("cpu_s"),
        (
            memory.struct.field("n").cast(pl.Float64, strict=False)
            * memory.struct.field("u").replace_strict(_SIZE, default=1, return_dtype=pl.Float64)
        )
        .cast(pl.Int64)
        .alias("memory_peak_bytes"),
    ).filter(pl.col("event").is_not_null())
    return df.select(
        [
            pl.col(c).cast(t, strict=False) if c in df.columns else pl.lit(None, t).alias(c)
            for c, t in LIFECYCLE.schema.items()
        ]
    )
