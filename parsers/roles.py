"""The role rule, written once: which role (``schema.ROLES``) a unit name, a command line or a process
title names. Used by the readers (unit choice), ingest (each record's role) and the py-spy parser
(a dump's process title), in Python and as a polars expression alike."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import polars as pl

from logcorr.parsers.prefix import PROMPT

# SGLang's flag, as argparse takes it (``--disaggregation-mode prefill``, ``=decode``) and as a
# process title or a repr prints it (``disaggregation_mode='prefill'``).
MODE = r"--disaggregation[-_]mode(?:=|\s+)['\"]?(prefill|decode)\b"
# A router's binary or module: sgl-router, sglang_router, sgl-model-gateway, smg, mini_lb.
ROUTER_PROCESS = r"sglang_router|sgl-router|sgl_router|model[-_]gateway|\bsmg\b|mini_lb"
# Words in a unit, pod or service name, first match wins.
NAME_WORDS = (("prefill", "prefill"), ("decode", "decode"), ("router", "router"), ("gateway", "router"))


def unit_names(overrides: dict[str, str]) -> dict[str, str]:
    """``--role NAME=ROLE`` overrides keyed by every unit name they give: NAME, and NAME.service
    where NAME has no ``.service``, as journalctl reads a unit name without a type (``-u NAME``)."""
    return {f"{n}.service": r for n, r in overrides.items() if not n.endswith(".service")} | overrides


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


# --- roles a record's own text names (``text_role``) ------------------------------------------------
# The SGLang event loop a frame runs in (a traceback, a py-spy stack, a frame line on its own) names
# the engine's half: ``event_loop_overlap_disagg_prefill``, ``disaggregation/decode.py``; a plain loop
# an engine that is no half.
FRAME_ROLES = (
    ("prefill", r"event_loop_\w*disagg_prefill|disaggregation/prefill\.py"),
    ("decode", r"event_loop_\w*disagg_decode|disaggregation/decode\.py"),
    # a scheduler's plain loop (event_loop_normal, event_loop_overlap, event_loop_pp): not half of a PD pair
    ("engine", r"\bevent_loop_(?:normal|overlap|pp)\b"),
)


# ``server_args=ServerArgs(… disaggregation_mode='decode' …)``: 'null' is a server that is not half
# of a PD pair (SGLang's default), an ``engine``.
def frame_role(frames: Iterable[str]) -> str | None:
    """The role the first of ``frames`` (``"function file"`` strings) that runs in a PD event loop
    names (``FRAME_ROLES``), else None: a py-spy stack in ``event_loop_overlap_disagg_decode`` is
    decode's, whatever its process title says (``sglang::scheduler_TP0`` names no role)."""
    for frame in frames:
        for role, rx in FRAME_ROLES:
            if re.search(rx, frame):
                return role
    return None


# What only one half of a PD pair prints (vLLM's KV connector): a request that waits for the KV its
# prefill sends is on the decode side; a prefill request taken off the queue (Dynamo's prefill worker)
# and a request marked to be decoded remotely are on the prefill side.
# A KV connector's worker that loads or pulls KV from the remote (prefill) engine is the consumer, on the
# decode side (vLLM's NixlConnector "start_load_kv for request R from remote engine E", its
# MooncakeConnector "pulling kv_caches for [...]"). A Dynamo process names the service it runs in its own
# lines ("dynamo_service_PrefillWorker started", "Starting Dynamo Service PrefillWorker", the worker's tag
# "serve_dynamo.worker: [PrefillWorker]"): a PrefillWorker is the prefill half, a DecodeWorker the decode.
STATE_ROLES = (
    (
        "decode",
        r"\bWAITING_FOR_REMOTE_KVS\b|\bstart_load_kv for request \S+ from remote engine\b|\bpulling kv_caches for\b"
        r"|\bdynamo_service_DecodeWorker\b|\bDynamo Service DecodeWorker\b|\bserve_dynamo\.worker: \[DecodeWorker\]",
    ),
    (
        "prefill",
        r"\bDequeued prefill request\b|'do_remote_decode': True"
        r"|\bdynamo_service_PrefillWorker\b|\bDynamo Service PrefillWorker\b|\bserve_dynamo\.worker: \[PrefillWorker\]",
    ),
)

SERVER_ARGS_MODE = r"server_args=ServerArgs\(.*?\bdisaggregation_mode='(prefill|decode|null)'"
SERVER_ARGS_ROLE = {"prefill": "prefill", "decode": "decode", "null": "engine"}


@dataclass(frozen=True)
class OwnName:
    """A place where a record's text prints the name of the pod, host or container it runs in (never
    a peer it talks to): ``regex`` with a group ``name`` (``(?m)``: on any line of the record); the
    name's role is ``NAME_WORDS``'."""

    what: str
    regex: str
    source: str
    sample: str
    role: str | None


OWN_NAMES = (
    OwnName(
        "nccl header",
        r"(?m)^(?P<name>[\w.-]+):\d+:\d+ \[\d+\] NCCL ",
        "NCCL_DEBUG=INFO lines: host:pid:tid [localRank] NCCL INFO (the host is the pod's name in k8s)",
        "s-2026-kg9mw-prefill-h7wpr-prefill-0:206899:206899 [0] NCCL INFO Connected all trees",
        "prefill",
    ),
    OwnName(
        "c10d socket",
        r"SocketImpl\(fd=\d+, addr=\[(?P<name>[^\]\s]+)\]:\d+",
        "PyTorch c10d TCPStore socket warnings: SocketImpl(fd=N, addr=[local host]:port, remote=…)",
        "[c10d] waitForInput: socket SocketImpl(fd=149, addr=[ds32-prefill-sgl059-head-0]:45532, "
        "remote=[x]:6379) timed out",
        "prefill",
    ),
    OwnName(
        "kubectl logs",
        r"(?m)(?:^|[#$>✗➜]\s+)(?:kubectl|k|oc)\s+(?:-{1,2}[\w-]+(?:[= ][\w./=-]+)?\s+)*logs\s+"
        r"(?:-{1,2}[\w-]+(?:=\S+)?\s+)*(?P<name>[a-z0-9][\w.-]*)",
        "the command a paste of `kubectl [-n NS] logs [-f] POD` opens with, also after a shell prompt",
        "[root@node14 kthena]# kubectl  -n prj-e5459ba0 logs -f deepseek-15b-0-prefill-0-0 --tail=100 --previous",
        "prefill",
    ),
    OwnName(
        "router target",
        # not text-generation-inference's `text_generation_router::`: TGI's HTTP server in front of one
        # model's shards, no router between engines (TGI#2614, batch19/13: engine or unknown by its key)
        r"^\S+[ T]\S+\s+(?:TRACE|DEBUG|INFO|WARN|ERROR)\s+(?:\S.*?\}: )?(?:text_generation_router|(?P<name>\w*router\w*))::",
        "a Rust tracing line whose target is a router crate (sglang_router_rs::, vllm_router_rs::): the "
        "router's own line, whatever pod it names (TGI's text_generation_router:: is its engine's web server)",
        "2026-03-31 13:29:07  INFO vllm_router_rs::server: src/server.rs:966: Started health checker",
        "router",
    ),
    OwnName(
        "shell prompt",
        r"(?m)^\s*[\w.-]+@(?P<name>[\w.-]+):\S*\s*[#$] ",
        "a shell prompt inside a pod or host: user@host:dir# command",
        "root@sglang-router-cache-roleset-pkzxq-routing-7795664d46-0:/# curl http://localhost:30000",
        "router",
    ),
)
# A reporter's label line before a pasted block ("Prefill node:", "decode instance log:", "prefill node
# throw exception:"): the block after it, up to the next label, is that half's unless its own text says
# otherwise. A file name ("prefill.log") is no label: pastes under one often hold the other half's lines.
LABEL_ROLE = (
    r"(?i)^\s*(?:the\s+|on\s+(?:the\s+)?)?(prefill|decode)(?:\s+|-)"
    r"(?:node|instance|server|worker|pod|side|engine)s?\b[^\n]{0,60}:[ \t]*(?:\n|$)"
)
# A prose line that names one serving half ("errors … on multiple decode workers", "(Error observed in
# Decode instance)", "D节点报KV传输失败"): the records after it are that half's, as after a label line. A
# line naming both halves gives the one it places the text on, in, at or inside ("on multiple decode
# workers, when a prefill worker crashed"); else none. "from" places nothing: it is the direction of what
# moves between the halves ("the decode node fails to get KV cache from the prefill node", batch10/01).
HALF_NAMED = (
    # "decode workers", and a numbered one as its pod is named: "decode0-pod0"
    r"(?i:\b(?:prefill|decode)\d*(?:\s+|-)(?:node|instance|server|worker|pod|side|engine|machine)(?:s|\d+)?\b)"
    r"|\b[PD][ -](?:node|instance)s?\b|(?i:prefill|decode)\s*(?:节点|实例|侧|端)|(?:^|[^A-Za-z])[PD]\s*(?:节点|实例|侧|端)"
)
HALF_PLACED = (
    r"(?i:\b(?:on|in|at|inside)\s+(?:(?:the|a|an|all|both|multiple|several|some|many|each|every|our|my|\d+)\s+)*)"
    rf"(?:{HALF_NAMED})|在\s*(?:{HALF_NAMED})"
)


# Both halves named in one phrase ("the Dynamo prefill and decode workers", "prefill/decode nodes"): the
# noun after the second names the first too, so the line names two halves, never one (batch10/07).
BOTH_HALVES = r"(?i)\b(?:prefill|decode)\s*(?:and|or|&|/|,)\s*(?:the\s+)?(?:prefill|decode)\b"


def _half_of(mention: pl.Expr) -> pl.Expr:
    """``prefill``/``decode`` of a ``HALF_NAMED`` mention (its word, or its P/D letter)."""
    letter = mention.str.extract(r"([PD])\s*(?:[ -](?:node|instance)|节点|实例|侧|端)", 1)
    return pl.coalesce(
        mention.str.extract(r"(?i)(prefill|decode)", 1).str.to_lowercase(),
        letter.replace_strict({"P": "prefill", "D": "decode"}, default=None, return_dtype=pl.String),
    )


def label_role(text: pl.Series) -> pl.Series:
    """The half a prose line gives the records after it (String Series, ``text``'s length; null where
    none): a label line's (``LABEL_ROLE``), else the one half the line names (``HALF_NAMED``), else, of
    two, the one it places the text on, in, at or inside (``HALF_PLACED``; never "from"); a line naming
    both in one phrase (``BOTH_HALVES``) gives none but by its label."""
    frame = pl.DataFrame({"t": text})
    halves = [
        pl.col("t").str.extract_all(rx).list.eval(_half_of(pl.element())).list.unique().alias(name)
        for name, rx in (("named", HALF_NAMED), ("placed", HALF_PLACED))
    ]
    both = pl.col("t").str.contains(BOTH_HALVES)
    one = [
        pl.when((pl.col(c).list.len() == 1) & ~both).then(pl.col(c).list.first()) for c in ("named", "placed")
    ]
    label = pl.col("t").str.extract(LABEL_ROLE, 1).str.to_lowercase()
    return frame.with_columns(halves).select(pl.coalesce(label, *one).alias("label_role"))["label_role"]


# A record an SGLang process logged (its header, rank-tagged or not, a logger or process name, a
# scheduler's exception or watchdog) and a prefill-decode cue: an SGLang input with no PD cue anywhere is
# served by an engine that is no half of a PD pair (SGLang's default, --disaggregation-mode null). A path
# of SGLang's package in a traceback frame is no such record: a bare traceback of the HTTP server (its
# tokenizer manager) reads the same on a prefill, a decode and a plain server, and prints no PD cue.
SGLANG_CUE = (
    r"(?m)^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?: [DTPE]P\d+)*\] |\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?: [DTPE]P\d+)+\]|sglang(?:\.srt|::|-\w)|"
    r"\b(?:Scheduler|TpModelWorkerClient) hit an exception|Watchdog timeout \(self\.watchdog_timeout"
)
PD_CUE = (
    r"(?i)disagg|bootstrap|\bPD\b|\b\d+P\d+D\b|(?:prefill|decode)[ _-]?(?:node|instance|server|pod|worker)|"
    r"kv_?transfer|remote_(?:prefill|decode)|transferring-req|KVPoll|mini_lb"
    # SGLang's Ascend KV transfer backend (disaggregation/ascend): "Ascend Transfer Engine initialization failed."
    r"|ascend[ _]transfer[ _]engine"
)


# Literal words one of the rules above needs: a record holding none is not searched (a day's journal
# holds a million records and almost none of these); "@" (a shell prompt) alone is searched faster.
_TEXT_ROLE_WORDS = (
    r"event_loop_|disaggregation/|server_args=| NCCL |SocketImpl\(|logs |router\w*::|REMOTE_KVS|Dequeued|do_remote_decode"
    r"|start_load_kv|pulling kv_caches|dynamo_service_|Dynamo Service|serve_dynamo"
)


_KUBECTL_LOGS = next(r.regex for r in OWN_NAMES if r.what == "kubectl logs")


def command_role(text: pl.Series) -> pl.Series:
    """The role a pasted prompt line (``prefix.PROMPT``: a shell prompt and its command) gives the output
    printed after it (String Series, ``text``'s length): the pod's, by ``NAME_WORDS``, of a command that
    prints one pod's logs (``kubectl [-n NS] logs [-f] POD``, ``OWN_NAMES``); "" for any other command or
    pod (what follows is output of no half it names); null for a line that is no prompt."""
    frame = pl.DataFrame({"t": text})
    pod = name_role_expr(pl.col("t").str.extract(_KUBECTL_LOGS, 1))
    prompt = pl.col("t").str.contains(PROMPT)
    return frame.select(pl.when(prompt).then(pod.fill_null("")).alias("command_role"))["command_role"]


def name_role_expr(name: pl.Expr) -> pl.Expr:
    """The role a pod, host or container name says by ``NAME_WORDS`` (``…-prefill-0``,
    ``…-routing-…`` of ``sglang-router-…``); null where it says none."""
    by_words = pl.lit(None, pl.String)
    for word, role in reversed(NAME_WORDS):
        by_words = pl.when(name.str.contains(f"(?i){word}")).then(pl.lit(role)).otherwise(by_words)
    return by_words


def text_role(text: pl.Series) -> pl.Series:
    """The role a record's own text (``message``, its header included) names (String Series,
    ``text``'s length; null where none): the
    event loop of a frame (``FRAME_ROLES``), a state only one half prints (``STATE_ROLES``), the ``disaggregation_mode`` of a server_args line
    (``SERVER_ARGS_MODE``; 'null' is ``engine``), else the name of the pod or host the text says it runs
    in (``OWN_NAMES``, by ``NAME_WORDS``). First of these that matches wins."""
    out = pl.Series("text_role", [None] * text.len(), pl.String)
    todo = (text.str.contains(_TEXT_ROLE_WORDS) | text.str.contains("@", literal=True)).fill_null(False)
    if not todo.any():
        return out
    at = todo.arg_true()
    frames = pl.coalesce(
        [pl.when(pl.col("t").str.contains(rx)).then(pl.lit(r)) for r, rx in (*FRAME_ROLES, *STATE_ROLES)]
    )
    mode = pl.col("t").str.extract(SERVER_ARGS_MODE, 1).replace_strict(SERVER_ARGS_ROLE, default=None)
    names = [pl.col("t").str.extract(r.regex, 1) for r in OWN_NAMES]
    found = pl.DataFrame({"t": text.gather(at)}).select(
        pl.coalesce(frames, mode, name_role_expr(pl.coalesce(names))).alias("r")
    )["r"]
    return out.scatter(at, found)
