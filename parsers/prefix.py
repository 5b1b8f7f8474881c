"""The line header: time printed in the line, level, pid and ranks, and where a record starts.

One table, ``HEADERS``, holds every header family as data: a regex whose named groups are its
fields, the producer it comes from, and sample lines with the fields they must yield (checked by
``tests/test_prefix.py``). The record-start rule (``is_record_start``) and the header split
(``split_prefix``) are both derived from it. Every function works on a whole column (polars, Rust
regex); nothing loops over lines in Python.

Group names: ``date`` (YYYY-MM-DD), ``year`` (YYYY), ``month``/``day``, ``time`` (HH:MM:SS[.f]),
``epoch`` (Unix seconds with a fraction, UTC), ``level`` (a word or a glog letter), ``ranks`` (SGLang
rank tokens), ``rank`` (a global rank), ``pid``, ``tid`` (a thread id), ``host``. A family without ``date`` or ``year`` prints no year: it is taken from the nearest dated
row of the same input, else left unknown (null), never invented. ANSI colour escapes are ignored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

import polars as pl

# Loggers print times, pids and ranks in ASCII digits: the header patterns say [0-9], not \d, which
# also takes the digits of other scripts and costs polars several times as long to compile (6.7 ms
# against 2.5 ms for the record-start pattern of every family); polars keeps 32 compiled patterns per
# thread, so the ingest compiles most of its patterns again on every chunk.
_DATE = r"[0-9]{4,5}-[0-9]{2}-[0-9]{2}"  # a fifth digit (year 10000) still opens a record; its time is out of range
_TIME = r"[0-9]{2}:[0-9]{2}:[0-9]{2}(?:[.,][0-9]+)?"
_RANK_TOKENS = r"(?:DP|PP|ATTN_CP|MOE_DP|TP|EP)[0-9]+"
LEVEL_WORD = r"DEBUG|INFO|WARNING|ERROR|CRITICAL"
ANSI_ESCAPE = r"\x1b\[[0-9;]*[A-Za-z]"
# Ray's and vLLM's worker-log prefix, once or twice (``(Worker pid=7) (Worker_TP2 pid=7) ``): the
# last worker name's rank tokens (``Worker_DP1_TP0_EP8``, ``EngineCore_DP0``, ``VllmWorker TP0``) are the line's ranks,
# its pid the line's pid; only a family marked ``after_worker`` may follow it (split_prefix). vLLM's
# multiproc executor before the TP/DP names (2025) printed ``(VllmWorker rank=1 pid=7)``: that rank is
# the worker's global rank (torch.distributed's, as PyTorch's ``[rankN]:``), which the contract keeps in
# tp_rank, and only where no rank token (TPn) is printed.
# Ray Serve names its actors by their application and deployment, ``(ServeReplica:default:LLMDeploymentqwen-0_5b
# pid=14262)``, and Ray prints a worker that runs no named actor as ``(pid=2159, ip=10.0.21.1)`` (ray#53267,
# ray#51242, batch21/02, 03): the name may hold ``:``-separated parts and may be missing.
WORKER_NAME = (
    # Worker_DP1_TP0_EP8, VllmWorker TP0, VllmWorker rank=1, ServeReplica:app:deployment-name
    r"[A-Za-z]\w*(?::[\w.-]+)*(?: [A-Z]+[0-9]+| rank=[0-9]+)*"
)
WORKER_RANK = r" rank=([0-9]+)"
RAY_PREFIX = rf"^(?:\((?:(?P<worker>{WORKER_NAME}) )?pid=(?P<wpid>[0-9]+)(?:, ip=[^)]*)?\) )+"


# The family of a header whose time is printed in UTC (Z or +00:00): its records are zoned.
UTC_HEADER = "iso_utc"
# sgl-router 0.1.x's own header: a router line whose time is local (the Rust tracing one prints UTC).
ROUTER_LOCAL_HEADER = "router_local"
# Header families whose time is UTC by their format: sgl-router's Rust tracing, ISO with Z/+00:00, UCX's
# epoch seconds. A record of another family with a time but no zone printed keeps it as printed.
UTC_HEADERS = ("router", UTC_HEADER, "ucx")


@dataclass(frozen=True)
class Header:
    """One header family: ``regex`` anchored at the line start, named groups as its fields;
    ``starts`` False for a family that is read but never opens a record on its own;
    ``after_worker`` True for a Python logger's header that a Ray/vLLM worker prefix may precede;
    ``own_lines`` True for a C++ logger that stamps every line it prints (glog, c10, NCCL): a line
    after its record that is not continuation-shaped is another writer's, never part of it;
    ``tail`` a regex anchored at the end of the record's first line whose named groups (``date``,
    ``time``) are fields the family prints after the message, not in its header."""

    name: str
    regex: str
    source: str
    samples: tuple[tuple[str, dict], ...] = ()
    starts: bool = True
    after_worker: bool = False
    own_lines: bool = False
    tail: str = ""


H = Header
# Tried in this order: the first family that matches wins (a custom header before the SGLang one it
# starts like; a glog line with a year before one without).
HEADERS = (
    H(
        "custom",
        rf"^\[(?P<date>{_DATE})[ T](?P<time>{_TIME})\]\[(?P<origin>[^\]\n]*)\]\[(?P<level>[A-Z]+)\]:? ?",
        "SGLANG_LOGGING_CONFIG_PATH formats, e.g. [%(asctime)s][%(filename)s:%(lineno)d][%(levelname)s]:",
        (("[2026-04-15 17:13:10][scheduler_metrics_mixin.py:424][INFO]: msg", {"level": "INFO"}),),
    ),
    H(
        "deepspeed",
        rf"^\[(?P<date>{_DATE}) (?P<time>{_TIME})\] \[(?P<level>{LEVEL_WORD})\] \[(?P<origin>[^\]\n]*)\] ?",
        "DeepSpeed's logger '[%(asctime)s] [%(levelname)s] [%(filename)s:%(lineno)d:%(funcName)s] %(message)s'"
        " (comma milliseconds; its launcher's sigkill_handler: DeepSpeed#3232, batch19/09)",
        (
            (
                "[2023-04-14 13:11:27,879] [INFO] [launch.py:428:sigkill_handler] Killing subprocess 13266",
                {
                    "level": "INFO",
                    "log_ts": datetime(2023, 4, 14, 13, 11, 27, 879000),
                    "body": "Killing subprocess 13266",
                },
            ),
        ),
    ),
    H(
        "tagged",
        rf"^\[(?P<date>{_DATE})[ T](?P<time>{_TIME})\] [A-Za-z][\w.-]* (?P<level>{LEVEL_WORD}): ",
        "a library's logger with a bracketed time, its name, then the level: LMCache's "
        "'[%(asctime)s] LMCache %(levelname)s: %(message)s' (comma milliseconds)",
        (
            (
                "[2025-10-31 21:08:41,928] LMCache INFO: Storing KV cache for 10 out of 10 tokens",
                {
                    "level": "INFO",
                    "log_ts": datetime(2025, 10, 31, 21, 8, 41, 928000),
                    "body": "Storing KV cache for 10 out of 10 tokens",
                },
            ),
        ),
    ),
    H(
        "log4j",
        # comma milliseconds (Java's and Python logging's asctime): SGLang's "[date time] LEVEL file.py:N:"
        # lines print none (SGLANG_LOG_MS: a dot) and stay its own
        rf"^\[(?P<date>{_DATE}) (?P<time>[0-9]{{2}}:[0-9]{{2}}:[0-9]{{2}},[0-9]{{3}})\] "
        rf"(?P<level>TRACE|DEBUG|INFO|WARN|ERROR|FATAL) ",
        "log4j's '[%d] %p %m (%c)%n' (Kafka, ZooKeeper; comma milliseconds): the level after the bracketed"
        " time (batch14/12, behind docker compose logs -t)",
        (
            (
                "[2024-01-29 16:04:29,231] INFO Registered kafka:type=kafka.Log4jController MBean",
                {
                    "level": "INFO",
                    "log_ts": datetime(2024, 1, 29, 16, 4, 29, 231000),
                    "body": "Registered kafka:type=kafka.Log4jController MBean",
                },
            ),
        ),
    ),
    H(
        "sglang",
        # the opening bracket is optional: a copy that starts one character late cuts it off, and a date,
        # a time and ranks closed by "]" are SGLang's header all the same
        rf"^\[?(?P<date>{_DATE})[ T](?P<time>{_TIME})(?P<ranks>(?: {_RANK_TOKENS})*)\] ?",
        "SGLang configure_logger: [%(asctime)s{prefix}], prefix tokens DP PP ATTN_CP MOE_DP TP EP "
        "(2024-2026 orders); SGLANG_LOG_MS adds .mmm",
        (
            ("[2025-08-31 07:26:45 TP0 EP0] msg", {"tp_rank": 0, "ep_rank": 0}),
            (
                "2026-05-24 03:51:44 TP0] Decode batch, #running-req: 4",
                {
                    "tp_rank": 0,
                    "log_ts": datetime(2026, 5, 24, 3, 51, 44),
                    "body": "Decode batch, #running-req: 4",
                },
            ),
        ),
    ),
    H(
        "sglang",
        # no time and no space before the first rank: a paste or a custom format that dropped the time with
        # its space ("[TP5 EP5] Scheduler hit an exception:", sglang#24153; "[TP0] Scheduler watchdog
        # timeout", sglang#30532; batch20/03, 06)
        rf"^\[(?:(?P<time>{_TIME}) | ?)(?P<ranks>{_RANK_TOKENS}(?: {_RANK_TOKENS})*)\] ?",
        "SGLang's header with a time of day only (2024: datefmt %H:%M:%S) or none at all (an empty datefmt): "
        "[16:43:29 TP0], [ TP2], [TP5 EP5]",
        (
            ("[16:43:29 TP0] Prefill batch. #new-seq: 1", {"tp_rank": 0, "log_ts": None}),
            ("[ TP2] Scheduler hit an exception:", {"tp_rank": 2, "log_ts": None}),
            (
                "[TP5 EP5] Scheduler hit an exception: Traceback (most recent call last):",
                {
                    "tp_rank": 5,
                    "ep_rank": 5,
                    "log_ts": None,
                    "body": "Scheduler hit an exception: Traceback (most recent call last):",
                },
            ),
        ),
    ),
    H(
        "sglang",
        # the time-of-day family above with its "[" and any date before the time cut off by a paste: the time
        # and the ranks closed by "]" are SGLang's header all the same (a time of day, as printed)
        rf"^(?P<time>{_TIME})(?P<ranks>(?: {_RANK_TOKENS})+)\] ?",
        "SGLang's header, its '[' and date cut off by a paste (17:15:42 DP3 TP3 EP3] …): the time of day and"
        " the ranks are read, no date (batch12/01)",
        (
            (
                "17:15:42 DP3 TP3 EP3] Scheduler hit an exception: Traceback (most recent call last):",
                {
                    "dp_rank": 3,
                    "tp_rank": 3,
                    "ep_rank": 3,
                    "log_ts": None,
                    "body": "Scheduler hit an exception: Traceback (most recent call last):",
                },
            ),
        ),
    ),
    H(
        "sglang",
        # the router's year-cut family below, for SGLang: the ranks and the closing "]" are still printed
        rf"^[0-9]{{1,3}}-[0-9]{{2}}-[0-9]{{2}}[ T]{_TIME}(?P<ranks>(?: {_RANK_TOKENS})+)\] ?",
        "SGLang's header as above, its '[' and the head of its year cut off by a paste (026-05-28 …): the"
        " ranks are read, the time stays unknown (batch10/06)",
        (
            (
                "026-05-28 00:11:09.816 DP0 TP0 EP0] Scheduler hit an exception: Traceback",
                {
                    "dp_rank": 0,
                    "tp_rank": 0,
                    "ep_rank": 0,
                    "log_ts": None,
                    "body": "Scheduler hit an exception: Traceback",
                },
            ),
        ),
    ),
    H(
        "sglang",
        r"^\[(?P<time>[0-9]{2}:[0-9]{2}:[0-9]{2})\] ",
        "SGLang 2024's header outside a rank (datefmt %H:%M:%S): [16:43:29] Prompts loaded.",
        (("[16:43:29] SGLang Generating!", {"log_ts": None, "body": "SGLang Generating!"}),),
    ),
    H(
        "sglang_diffusion",
        r"^\[(?P<month>[0-9]{2})-(?P<day>[0-9]{2}) (?P<time>[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?)\] ",
        "SGLang's multimodal_gen logger (sglang generate / serve of a diffusion model, 2025-12: datefmt"
        " %m-%d %H:%M:%S, no year, no level): [12-16 14:27:08] Rank 0 scheduler is dead. (batch16/07)",
        (
            (
                "[12-16 14:27:10] Exit code: -9",
                {"log_ts": None, "level": None, "printed_time": "12-16 14:27:10", "body": "Exit code: -9"},
            ),
        ),
    ),
    H(
        "custom",
        rf"^(?P<date>{_DATE}) (?P<time>{_TIME}) (?P<level>{LEVEL_WORD}) (?P<pid>[0-9]+) "
        rf"\[ ?(?P<ranks>(?:{_RANK_TOKENS} )*)[^\]\s]+:[0-9]+\] ?",
        "a custom SGLang logging format (sglang#9867): '%(asctime)s %(levelname)s %(process)d [{prefix} "
        "%(filename)s:%(lineno)d] %(message)s'",
        (
            (
                "2025-08-28 21:19:34 ERROR 125765 [ DP10 TP10 EP10 scheduler.py:2655] frame #25: x",
                {
                    "level": "ERROR",
                    "pid": 125765,
                    "dp_rank": 10,
                    "tp_rank": 10,
                    "ep_rank": 10,
                    "log_ts": datetime(2025, 8, 28, 21, 19, 34),
                    "body": "frame #25: x",
                },
            ),
        ),
    ),
    H(
        "glog",
        r"^(?P<level>[IWEF])(?P<year>[0-9]{4})(?P<month>[0-9]{2})(?P<day>[0-9]{2}) (?P<time>[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]+)\s+(?P<tid>[0-9]+)"
        r" [^\]\s]+:[0-9]+\] ?",
        "glog with the year (newer Mooncake, absl): I20260317 09:49:03.944839 tid file:line]",
        (("I20260317 09:49:03.944839  8123 client.cpp:12] msg", {"level": "INFO", "tid": 8123}),),
        own_lines=True,
    ),
    H(
        "glog",
        r"^(?P<level>[IWEF])(?P<month>[0-9]{2})(?P<day>[0-9]{2}) (?P<time>[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]+)\s+(?P<pid>[0-9]+) [^\]\s]+\.go:[0-9]+\] ?",
        "klog (Go: Kubernetes components, llm-d's routing sidecar, Dynamo's Go parts): glog's header from a .go "
        "file, Immdd hh:mm:ss.uuuuuu PID file.go:line], no year; klog prints the process id where glog prints a "
        "thread id (Go has no thread ids)",
        (
            (
                'I0808 21:06:08.476800       1 proxy.go:206] "shutting down" logger="proxy server"',
                {"level": "INFO", "pid": 1, "tid": None, "body": '"shutting down" logger="proxy server"'},
            ),
        ),
        own_lines=True,
    ),
    H(
        "glog",
        r"^(?P<level>[IWEF])(?P<month>[0-9]{2})(?P<day>[0-9]{2}) (?P<time>[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]+)\s+(?P<pid>[0-9]+) site-packages/torch/[^\]\s]+:[0-9]+\] ?",
        "PyTorch's own logging (torch._logging, ≥2.5: torch.distributed.elastic's agent): glog's header whose "
        "number is the process id and whose path is cut at site-packages/ (accelerate#3861, batch21/13); older "
        "releases printed the thread id and the whole path (the family below)",
        (
            (
                "E1128 21:12:50.390000 3139541 site-packages/torch/distributed/elastic/multiprocessing/api.py:874]"
                " failed (exitcode: -6) local_rank: 3 (pid: 3139623) of binary: /data1/bin/python3.10",
                {"level": "ERROR", "pid": 3139541, "tid": None},
            ),
        ),
        own_lines=True,
    ),
    H(
        "glog",
        r"^(?P<level>[IWEF])(?P<month>[0-9]{2})(?P<day>[0-9]{2}) (?P<time>[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]+)\s+(?P<tid>[0-9]+) [^\]\s]+:[0-9]+\] ?",
        "glog (Mooncake, C++ libraries): E0414 03:56:41.856248 tid file:line], no year",
        (
            (
                "E0414 03:56:41.856248 77969 transfer_metadata_plugin.cpp:173] msg",
                {"level": "ERROR", "tid": 77969, "pid": None, "log_ts": None},
            ),
            ("I0325 09:32:23.100996  7990 client_metric.cpp:76] msg", {"level": "INFO", "tid": 7990}),
        ),
        own_lines=True,
    ),
    H(
        "ray",
        rf"^\[(?P<date>{_DATE}) (?P<time>{_TIME}) (?P<level>[DIWEF]) (?P<pid>[0-9]+) (?P<tid>[0-9]+)\]"
        r" [^\]\s:]+:[0-9]+: ?",
        "Ray's C++ core (raylet, core worker, GCS; RayLog over spdlog ≈Ray 1.x-2.x): [YYYY-MM-DD hh:mm:ss,mmm L"
        " PID TID] file.cc:line:, local time, no zone (batch13/04)",
        (
            (
                "[2024-02-27 16:09:19,106 E 19394 19394] logging.cc:361: *** SIGSEGV received at time=1709021359",
                {
                    "level": "ERROR",
                    "pid": 19394,
                    "tid": 19394,
                    "log_ts": datetime(2024, 2, 27, 16, 9, 19, 106000),
                    "body": "*** SIGSEGV received at time=1709021359",
                },
            ),
        ),
        own_lines=True,
    ),
    H(
        "golog",
        r"^(?P<year>[0-9]{4})/(?P<month>[0-9]{2})/(?P<day>[0-9]{2}) (?P<time>[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?) ",
        "Go's standard log package (log.LstdFlags, Lmicroseconds adds .uuuuuu): YYYY/MM/DD hh:mm:ss, local time"
        " (no zone), no level; llm-d's routing sidecar before klog (batch10/08), nginx's error log",
        (
            (
                "2025/05/11 18:27:43 http: proxy error: dial tcp [::1]:8200: connect: connection refused",
                {
                    "level": None,
                    "log_ts": datetime(2025, 5, 11, 18, 27, 43),
                    "body": "http: proxy error: dial tcp [::1]:8200: connect: connection refused",
                },
            ),
        ),
    ),
    H(
        "torch",
        r"^\[rank(?P<rank>[0-9]+)\]:\[(?P<level>[IWEF])(?P<month>[0-9][0-9]?)(?P<day>[0-9]{2}) (?P<time>[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]+)"
        r" [^\]\s]+:[0-9]+\] ?",
        "PyTorch c10 logging with TORCH_DISTRIBUTED rank prefix (global rank, stored as tp_rank), no year",
        (
            (
                "[rank3]:[E908 08:39:25.432755661 ProcessGroupNCCL.cpp:2068] msg",
                {"tp_rank": 3, "level": "ERROR"},
            ),
            (
                "[rank1]:[W324 12:06:11.712348372 socket.cpp:472] [c10d] waitForInput: poll",
                {"tp_rank": 1, "level": "WARNING", "log_ts": None, "body": "[c10d] waitForInput: poll"},
            ),
        ),
        own_lines=True,
    ),
    H(
        "torch",
        r"^\[rank(?P<rank>[0-9]+)\]:(?P<level>[IWEF])(?P<month>[0-9]{2})(?P<day>[0-9]{2}) (?P<time>[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]+)"
        r"\s+(?P<pid>[0-9]+) [^\]\s]+:[0-9]+\] ?",
        "PyTorch's Python logging with TORCH_DISTRIBUTED rank prefix, glog-style: [rankN]:W1207 hh:mm:ss.f pid "
        "file.py:N] (torch._inductor, torch.distributed; no year)",
        (
            (
                "[rank0]:W1207 22:10:35.487000 73 torch/_inductor/codecache.py:123] msg",
                {"tp_rank": 0, "level": "WARNING", "pid": 73, "log_ts": None, "body": "msg"},
            ),
        ),
        after_worker=True,
    ),
    H(
        "c10",
        r"^\[(?P<level>[IWEF])(?P<month>[0-9][0-9]?)(?P<day>[0-9]{2}) (?P<time>[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]+) [^\]\s]+:[0-9]+\] ?",
        "PyTorch c10 logging without the rank prefix: [W227 14:33:13.089 file.cpp:123], no year",
        (("[W227 14:33:13.089395 socket.cpp:752] msg", {"level": "WARNING"}),),
        own_lines=True,
    ),
    H(
        "c10",
        r"^(?:\[rank(?P<rank>[0-9]+)\]:)?\[(?P<level>[IWEF]) [^\]\s]+\.(?:cpp|cc|cu|h|hpp):[0-9]+\] ?",
        "PyTorch c10 logging without a time (torch ≤2.1, C10_USE_GLOG off): [E ProcessGroupNCCL.cpp:475],"
        " after torch's [rankN]: prefix when TORCH_CPP_LOG_LEVEL prints it",
        (
            ("[E ProcessGroupNCCL.cpp:475] [Rank 4] Watchdog caught", {"level": "ERROR", "log_ts": None}),
            ("[rank0]:[E ProcessGroupNCCL.cpp:563] [Rank 0] msg", {"level": "ERROR", "tp_rank": 0}),
        ),
        after_worker=True,  # a Ray worker's C++ lines: "(RayWorkerVllm pid=5085) [E ProcessGroupNCCL.cpp:475] "
        own_lines=True,
    ),
    H(
        "router",
        rf"^(?P<date>{_DATE})[ T](?P<time>{_TIME})Z?\s+(?P<level>TRACE|DEBUG|INFO|WARN|ERROR)\s+",
        "sgl-router / smg: Rust tracing fmt, UTC, level right-aligned to 5 characters",
        (("2025-10-29 21:49:19 ERROR target: file.rs:142: msg", {"level": "ERROR"}),),
    ),
    H(
        "router",
        r"^[0-9]{1,3}-[0-9]{2}-[0-9]{2}[ T][0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?Z?\s+(?P<level>TRACE|DEBUG|INFO|WARN|ERROR)\s+",
        "sgl-router / smg as above, its year cut short by a paste: the level is read, the time stays unknown",
        (
            (
                "025-07-31 21:42:46  INFO http_request{method=GET}: sglang_router_rs::request: msg",
                {"level": "INFO", "log_ts": None},
            ),
        ),
    ),
    H(
        "trtllm",
        r"^\[(?:TensorRT-LLM|TM|FT)\]\[(?P<level>TRACE|DEBUG|VERBOSE|INFO|WARNING|ERROR|FATAL)\] ",
        "NVIDIA's C++ engines' logger, [NAME][LEVEL] msg, no time: TensorRT-LLM's [TensorRT-LLM][INFO]"
        " (TensorRT-LLM#9680: batch17/07), LMDeploy's TurboMind [TM][INFO] (lmdeploy#1788: batch21/10) and the"
        " FasterTransformer it comes from [FT][INFO]",
        (
            (
                "[TM][INFO] [forward] Enqueue requests",
                {"level": "INFO", "log_ts": None, "body": "[forward] Enqueue requests"},
            ),
            (
                "[TensorRT-LLM][INFO] MPI size: 4, MPI local size: 4, rank: 2",
                {
                    "level": "INFO",
                    "log_ts": None,
                    "tp_rank": None,
                    "body": "MPI size: 4, MPI local size: 4, rank: 2",
                },
            ),
        ),
    ),
    H(
        "torch_elastic_failure",
        # the entry's first lines: its index, then "time : 2024-09-11_09:17:37" (the agent's local time, no zone),
        # the host and the global rank (its local rank and exit code stay in the body)
        rf"^\[[0-9]+\]:[ \t]*\n[ \t]+time[ \t]*: (?P<date>{_DATE})_(?P<time>{_TIME})[ \t]*\n"
        r"(?:[ \t]+host[ \t]*: (?P<host>[^\s]+)[ \t]*\n)?(?:[ \t]+rank[ \t]*: (?P<rank>[0-9]+)\b)?",
        "torch.distributed.elastic's ChildFailedError table, one entry per failed worker ('[0]:' then 'time :"
        " 2024-09-11_09:17:37', host, rank, exitcode, pid): its Root Cause and Failures (NCCL#1439: batch21/12;"
        " accelerate#2960: batch17/02, 03); the entry opens a record by its '[N]:' line (BODY_STARTS)",
        (
            (
                "[0]:\n  time      : 2024-09-11_09:17:37\n  host      : 9018.idas\n  rank      : 1 (local_rank: 1)\n"
                "  exitcode  : -6 (pid: 886322)",
                {
                    "log_ts": datetime(2024, 9, 11, 9, 17, 37),
                    "host": "9018.idas",
                    "tp_rank": 1,
                    "level": None,
                    "body": " (local_rank: 1)\n  exitcode  : -6 (pid: 886322)",
                },
            ),
        ),
        starts=False,
    ),
    H(
        "slurm",
        r"^(?:srun|slurmstepd|salloc|sbatch): (?P<level>error|warning): ",
        "Slurm's client and step daemon on stderr: 'srun: error: host: task 0: Exited with exit code 1'"
        " (accelerate#2960: batch17/03), 'slurmstepd: error: *** STEP … CANCELLED …'; no time",
        (
            (
                "srun: error: SH-IDC1-10-140-24-95: task 0: Exited with exit code 1",
                {
                    "level": "error",
                    "log_ts": None,
                    "body": "SH-IDC1-10-140-24-95: task 0: Exited with exit code 1",
                },
            ),
        ),
    ),
    H(
        "rust_tracing",
        r"^(?P<level>TRACE|DEBUG|INFO|WARN|ERROR) +(?:[\w-]+\{[^\n]*?\}: )?(?:[a-z_][a-z0-9_]*::)+[a-z_][a-z0-9_]*: ",
        "Rust tracing's fmt without a time (.without_time(), or a paste that left it out): LEVEL target::path: msg,"
        " after the level an optional span (name{fields}: ); Dynamo's 'ERROR dynamo_runtime::worker: Application"
        " shutdown with error: …' (dynamo#1188: batch17/13); no time is read",
        (
            (
                "ERROR dynamo_runtime::worker: Application shutdown with error: Failed to connect to etcd server",
                {
                    "level": "ERROR",
                    "log_ts": None,
                    "body": "Application shutdown with error: Failed to connect to etcd server",
                },
            ),
        ),
    ),
    H(
        ROUTER_LOCAL_HEADER,
        rf"^\[Router \([\w ]+\)\] (?P<date>{_DATE}) (?P<time>{_TIME}) - (?P<level>TRACE|DEBUG|INFO|WARN|ERROR) - ",
        "sgl-router 0.1.x (2025-03, Rust core under Python): [Router (Rust)] YYYY-MM-DD HH:MM:SS - LEVEL - msg "
        "(its time is local: chrono::Local, no zone printed)",
        (
            (
                "[Router (Rust)] 2025-03-08 02:33:09 - INFO - Worker http://0.0.0.0:31000 health check is pending",
                {"level": "INFO"},
            ),
        ),
    ),
    H(
        "nccl",
        r"^(?P<host>[\w.-]+):(?P<pid>[0-9]+):(?P<tid>[0-9]+) \[[0-9]+\] (?:[\w./-]+:[0-9]+ )?"
        r"NCCL (?P<level>INFO|WARN|ERROR|TRACE)\b ?",
        "NCCL_DEBUG output: host:pid:tid [cudaDev] NCCL INFO; its WARN lines name the source file:line before"
        " NCCL; the bracket is the CUDA device index, not a rank",
        (
            (
                "kp-ddp-worker-0:3468:3905 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion from peer"
                " 10.0.15.1<54862> with status=12 opcode=0 len=0 vendor err 129 (Recv)",
                {"pid": 3468, "tid": 3905, "host": "kp-ddp-worker-0", "level": "WARNING", "tp_rank": None},
            ),
            (
                "ip-10-0-9-12:5801:5850 [1] NCCL INFO [Service thread] Connection closed",
                {"pid": 5801, "tid": 5850, "host": "ip-10-0-9-12", "tp_rank": None, "log_ts": None},
            ),
            (
                "s-20260228211257-kg9mw-prefill-0:206899:213190 [0] NCCL INFO [Proxy Progress] Device 0",
                {"host": "s-20260228211257-kg9mw-prefill-0", "pid": 206899, "tid": 213190, "log_ts": None},
            ),
        ),
        own_lines=True,
    ),
    H(
        "lmcache_tail",
        rf"^(?P<level>{LEVEL_WORD}) LMCache: ",
        "LMCache's logger before 0.2: '%(levelname)s LMCache: %(message)s [%(asctime)s] -- %(pathname)s:%(lineno)d',"
        " its time (comma milliseconds) after the message (batch12/10)",
        (
            (
                "(VllmWorkerProcess pid=319) INFO LMCache: Creating LMCacheEngine instance vllm-instance"
                " [2025-03-19 13:01:55,934] -- /opt/venv/lib/python3.12/site-packages/lmcache/experimental/"
                "cache_engine.py:290",
                {"level": "INFO", "pid": 319, "log_ts": datetime(2025, 3, 19, 13, 1, 55, 934000)},
            ),
            ("WARNING LMCache: no stamp at the end", {"level": "WARNING", "log_ts": None}),
        ),
        after_worker=True,
        tail=rf" \[(?P<date>{_DATE}) (?P<time>{_TIME})\] -- [^\n]*:[0-9]+[ \t]*(?:\n|$)",
    ),
    H(
        "vllm",
        rf"^(?P<level>{LEVEL_WORD}) (?P<month>[0-9]{{2}})-(?P<day>[0-9]{{2}}) (?P<time>[0-9]{{2}}:[0-9]{{2}}:[0-9]{{2}}(?:\.[0-9]+)?) \[?[^\]\s]+:[0-9]+(?:\]|\[\])(?:\(https?://[^)\s]*\)\])? ?",
        "vLLM's logger: LEVEL MM-DD HH:MM:SS [file.py:line] (before 2025-03 without the '['), no year; the tag"
        " as GitHub auto-links it in a pasted issue ([[file.py:line](http://file.py:line/)]) is the same tag, and"
        " so is the tag of a paste that writes every ']' as '[]' ([core.py:720[], vllm#27194: batch17/01)",
        (
            ("INFO 11-12 09:49:50 [api_server.py:585] msg", {"level": "INFO", "log_ts": None}),
            (
                "INFO 06-11 12:33:49 [[loggers.py:259](http://loggers.py:259/)] Engine 000: Avg",
                {"level": "INFO", "body": "Engine 000: Avg"},
            ),
            (
                "(EngineCore_DP0 pid=559) ERROR 10-20 03:20:50 [core.py:720[] EngineCore encountered a fatal error.",
                {"level": "ERROR", "pid": 559, "dp_rank": 0, "body": "EngineCore encountered a fatal error."},
            ),
            (
                "INFO 04-01 17:24:46 __init__.py:190] Automatically detected",
                {"level": "INFO", "body": "Automatically detected"},
            ),
            (
                "(Worker_DP1_TP0_EP8 pid=23143) ERROR 03-17 09:49:03 [mooncake_backend.py:85] Failed to put",
                {
                    "level": "ERROR",
                    "dp_rank": 1,
                    "tp_rank": 0,
                    "ep_rank": 8,
                    "pid": 23143,
                    "body": "Failed to put",
                },
            ),
            (
                "(Worker pid=107182) (Worker_TP2 pid=107182) ERROR 03-28 09:06:16 [mooncake_backend.py:85] x",
                {"level": "ERROR", "tp_rank": 2, "dp_rank": None, "pid": 107182, "body": "x"},
            ),
            (
                "(VllmWorker rank=1 pid=98474) DEBUG 07-08 02:13:53 [nixl_connector.py:472] Querying master",
                {"level": "DEBUG", "tp_rank": 1, "pid": 98474, "log_ts": None, "body": "Querying master"},
            ),
        ),
        after_worker=True,
    ),
    H(
        "cann",
        r"^\[(?P<level>ERROR|WARNING|INFO|DEBUG|EVENT)\] [\w-]+\((?P<pid>[0-9]+),[^)]*\):"
        r"(?P<date>[0-9]{4}-[0-9]{2}-[0-9]{2})-(?P<time>[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{3}(?:\.[0-9]{3})?)?) ?",
        "Ascend CANN / HCCL plog: [ERROR] MODULE(pid,proc):YYYY-MM-DD-HH:MM:SS.mmm.uuu [file:line]tid msg (the"
        " pid the module prints; milliseconds and microseconds printed apart, one fraction: batch10/15)",
        (
            (
                "[ERROR] HCCL(1234,python):2025-03-01-10:20:30.123.456 [file.cc:88] msg",
                {"level": "ERROR", "pid": 1234, "log_ts": datetime(2025, 3, 1, 10, 20, 30, 123456)},
            ),
        ),
    ),
    H(
        "cann",
        r"^\[(?P<level>ERROR|WARNING|INFO|DEBUG|EVENT)\] "
        r"(?P<date>[0-9]{4}-[0-9]{2}-[0-9]{2})-(?P<time>[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?)(?:\.[0-9]+)* ?"
        r"(?:\(PID:(?P<pid>[0-9]+)[^)]*\) ?)?",
        "torch_npu's [ERROR] YYYY-MM-DD-HH:MM:SS (PID:N, Device:D, RankID:R) (RankID is not a TP rank)",
        (
            (
                "[ERROR] 2026-07-07-07:20:43 (PID:163686, Device:1, RankID:-1) ERR00100 PTA call acl api failed",
                {
                    "level": "ERROR",
                    "pid": 163686,
                    "tp_rank": None,
                    "log_ts": datetime(2026, 7, 7, 7, 20, 43),
                    "body": "ERR00100 PTA call acl api failed",
                },
            ),
        ),
    ),
    H(
        "cann",
        r"^[A-Z]{2}[0-9]{4}\[PID: (?P<pid>[0-9]+)\] (?P<date>[0-9]{4}-[0-9]{2}-[0-9]{2})-(?P<time>[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?)"
        r"(?:\.[0-9]+)* (?:\([A-Z]{2}[0-9]{4}\): ?)?",
        "Ascend CANN error-code lines: EZ9999[PID: N] YYYY-MM-DD-HH:MM:SS.mmm.uuu (EZ9999): msg",
        (
            (
                "EZ9999[PID: 163686] 2026-07-07-07:20:43.817.613 (EZ9999):  Kernel task happen error",
                {"pid": 163686, "log_ts": datetime(2026, 7, 7, 7, 20, 43, 817000), "level": None},
            ),
        ),
    ),
    H(
        "torch_npu",
        r"^\[(?P<pid>[0-9]+)\] \[(?P<date>[0-9]{4}-[0-9]{2}-[0-9]{2}) (?P<time>[0-9]{2}:[0-9]{2}:[0-9]{2})(?::[0-9]+)?\] [\w.]+: "
        r"\[(?P<level>[A-Z]+)\] (?:\[(?P<tid>[0-9]+)\] )?",
        "torch_npu's logger: [pid] [YYYY-MM-DD HH:MM:SS:mmm] logger: [LEVEL] [tid] (the milliseconds after "
        "a colon are not read)",
        (
            (
                "[163686] [2026-07-07 07:20:43:938] torch.distributed: [ERROR] [164517] Find exception",
                {
                    "pid": 163686,
                    "tid": 164517,
                    "level": "ERROR",
                    "log_ts": datetime(2026, 7, 7, 7, 20, 43),
                    "body": "Find exception",
                },
            ),
        ),
    ),
    H(
        "ucx",
        r"^(?:\[(?P<epoch>[0-9]{9,}\.[0-9]+)\] )?\[(?P<host>[^\]\s:]+):(?P<pid>[0-9]+)\s*:(?:[0-9]+:)?(?P<tid>[0-9]+)\]"
        r"(?:\s+\S+:[0-9]+\s+UCX\s+(?P<level>[A-Z]+)\b)? *",
        "UCX (under NIXL/Mooncake): [epoch seconds] [host:pid:tid] or [host:pid:x:tid] file:line UCX LEVEL; its "
        "signal handler's report (ucs_handle_error: Caught signal N …) prints the [host:pid:x:tid] part alone",
        (
            (
                "[1784621081.896649] [host:537  :1]       srd_iface.c:221  UCX  ERROR send completion",
                {
                    "pid": 537,
                    "tid": 1,
                    "host": "host",
                    "level": "ERROR",
                    "log_ts": datetime(2026, 7, 21, 8, 4, 41, 896649),
                    "body": "send completion",
                },
            ),
            (
                "[mlp-dgx-01:45435:0:45788] Caught signal 11 (Segmentation fault: address not mapped to object)",
                {
                    "pid": 45435,
                    "tid": 45788,
                    "host": "mlp-dgx-01",
                    "level": None,
                    "log_ts": None,
                    "body": "Caught signal 11 (Segmentation fault: address not mapped to object)",
                },
            ),
        ),
    ),
    H(
        "uvicorn",
        rf"^(?P<level>{LEVEL_WORD}):\s+",
        "uvicorn's default formatter (level only), also after an SGLang header",
        (('INFO:     127.0.0.1:1 - "GET /health HTTP/1.1" 200 OK', {"level": "INFO"}),),
        after_worker=True,
    ),
    H(
        "pylog",
        rf"^(?P<level>{LEVEL_WORD}) [\w.-]+\.py:[0-9]+: ",
        "Python logging '%(levelname)s %(filename)s:%(lineno)d: %(message)s' (SGLang ROCm builds 2026), "
        "also after an SGLang header",
        (("WARNING server_args.py:2326: KV cache is forced as chunk cache", {"level": "WARNING"}),),
        after_worker=True,
    ),
    H(
        "pylogging",
        rf"^(?P<date>{_DATE}) (?P<time>{_TIME}) - [^\s]+ - (?P<level>{LEVEL_WORD}) - ",
        "Python logging's '%(asctime)s - %(name)s - %(levelname)s - %(message)s' (comma milliseconds; "
        "a wrapper re-logging a child's output, e.g. olmocr)",
        (
            (
                "2025-03-08 02:04:48,880 - __main__ - ERROR - Ended up starting the sglang server",
                {
                    "level": "ERROR",
                    "log_ts": datetime(2025, 3, 8, 2, 4, 48, 880000),
                    "body": "Ended up starting the sglang server",
                },
            ),
        ),
    ),
    H(
        "ray_serve",
        # the level, the time, then up to five words naming who logs (the controller and its pid; a replica's
        # deployment, replica id and request id; an older replica's file:line) before " -- " (or " - ")
        rf"^(?P<level>{LEVEL_WORD}) (?P<date>{_DATE}) (?P<time>{_TIME}) (?:[^\s-][^\s]* ){{1,5}}--? ",
        "Ray Serve's logger '%(levelname)s %(asctime)s {deployment} {replica} {request_id} -- %(message)s' (comma "
        "milliseconds, no zone), behind the Ray worker prefix (ray#53267, ray#51242: batch21/02, 03)",
        (
            (
                "(ServeController pid=2922) ERROR 2025-04-02 17:25:34,553 controller 2922 -- Exception in Replica(id="
                "'m37qpvvp', deployment='vLLM:qwen-1_5b', app='default'), the replica will be stopped.",
                {
                    "level": "ERROR",
                    "pid": 2922,
                    "log_ts": datetime(2025, 4, 2, 17, 25, 34, 553000),
                    "body": "Exception in Replica(id='m37qpvvp', deployment='vLLM:qwen-1_5b', app='default'), the"
                    " replica will be stopped.",
                },
            ),
            (
                "ERROR 2025-05-23 00:42:04,876 default_LLMDeploymentqwen-0_5b rcja4aht 700823bf-0cfe -- Encountered"
                " failure while handling request 700823bf-0cfe",
                {
                    "level": "ERROR",
                    "log_ts": datetime(2025, 5, 23, 0, 42, 4, 876000),
                    "body": "Encountered failure while handling request 700823bf-0cfe",
                },
            ),
        ),
        after_worker=True,
    ),
    H(
        "named",
        rf"^(?P<date>{_DATE}) (?P<time>{_TIME}) [A-Za-z][\w.-]* (?P<level>{LEVEL_WORD})\s+[^\s:]+\.py:[0-9]+ ",
        "a library's Python logger with its name before the level and file:line after it: NIXL's "
        "'%(asctime)s NIXL %(levelname)-8s %(filename)s:%(lineno)d %(message)s' (no zone), also behind a "
        "vLLM worker's prefix",
        (
            (
                "2025-11-25 02:39:46 NIXL INFO    _api.py:361 Backend UCX was instantiated",
                {
                    "level": "INFO",
                    "log_ts": datetime(2025, 11, 25, 2, 39, 46),
                    "body": "Backend UCX was instantiated",
                },
            ),
            (
                "(EngineCore_DP0 pid=594) 2025-11-25 02:39:46 NIXL INFO    _api.py:251 Initialized NIXL agent: 72f",
                {"level": "INFO", "pid": 594, "dp_rank": 0, "body": "Initialized NIXL agent: 72f"},
            ),
        ),
        after_worker=True,
    ),
    H(
        "fastchat",
        # the logger named stdout or stderr is the stream FastChat's StreamToLogger redirected into it, every
        # stderr line at ERROR, a tqdm bar too: no level the program printed (batch25/01-03); any other logger
        # name is a Python logger whose records go through the same formatter, its level its own
        rf"^(?P<date>{_DATE}) (?P<time>{_TIME}) \| (?:(?:{LEVEL_WORD}) \| std(?:out|err)"
        rf"|(?P<level>{LEVEL_WORD}) \| [\w.-]+) \| ?",
        "FastChat's build_logger '%(asctime)s | %(levelname)s | %(name)s | %(message)s' (no zone; its workers, and "
        "transformerlab's plugins that reuse it, log the engine's stdout and stderr through it line by line: "
        "FastChat#3498, #3372, transformerlab-api#381)",
        (
            (
                '2024-08-27 12:54:55 | ERROR | stderr |   File "/usr/lib/python3.10/runpy.py", line 86, in _run_code',
                {
                    "level": None,
                    "log_ts": datetime(2024, 8, 27, 12, 54, 55),
                    "body": '  File "/usr/lib/python3.10/runpy.py", line 86, in _run_code',
                },
            ),
            (
                "2025-07-02 16:41:30 | WARNING | sglang.srt.models.registry | Ignore import error when loading x",
                {"level": "WARNING", "body": "Ignore import error when loading x"},
            ),
        ),
    ),
    H(
        "pylogging",
        # Xinference's '%(asctime)s %(name)-12s %(process)d %(levelname)-8s %(message)s' (xinference#3745,
        # batch25/04): the logger's name, the process id, the level padded to eight
        rf"^(?P<date>{_DATE}) (?P<time>{_TIME}) [A-Za-z_][\w.]* +(?P<pid>[0-9]+) (?P<level>{LEVEL_WORD}) +",
        "Python logging with the logger's name and the process id before the level (Xinference's "
        "'%(asctime)s %(name)-12s %(process)d %(levelname)-8s %(message)s', comma milliseconds, no zone)",
        (
            (
                "2025-06-30 06:18:36,801 xinference.core.worker 113 ERROR    [request b087e27a] Leave launch",
                {
                    "level": "ERROR",
                    "pid": 113,
                    "log_ts": datetime(2025, 6, 30, 6, 18, 36, 801000),
                    "body": "[request b087e27a] Leave launch",
                },
            ),
        ),
    ),
    H(
        "pylogging",
        rf"^(?P<date>{_DATE}) (?P<time>{_TIME}) - (?P<level>{LEVEL_WORD}) - [\w.-]+: ",
        "Python logging's '%(asctime)s - %(levelname)s - %(name)s: %(message)s', the level before the logger "
        "(flashinfer's logger; comma milliseconds)",
        (
            (
                "2025-06-25 11:25:58,633 - INFO - flashinfer.jit: Prebuilt kernels not found, using JIT backend",
                {
                    "level": "INFO",
                    "log_ts": datetime(2025, 6, 25, 11, 25, 58, 633000),
                    "body": "Prebuilt kernels not found, using JIT backend",
                },
            ),
        ),
    ),
    H(
        UTC_HEADER,
        rf"^(?P<date>{_DATE})T(?P<time>{_TIME})(?:Z|[+-]00:?00) \[(?P<level>{LEVEL_WORD})\] ",
        "ISO 8601 in UTC (Z or +0000) with a bracketed level: Dynamo's CLI "
        "'2025-04-01T17:24:43+0000 [WARNING] [cli] msg' (its time is UTC)",
        (
            (
                "2025-04-01T17:24:43+0000 [WARNING] [cli] Converting 'Frontend' to lowercase",
                {
                    "level": "WARNING",
                    "log_ts": datetime(2025, 4, 1, 17, 24, 43),
                    "body": "[cli] Converting 'Frontend' to lowercase",
                },
            ),
        ),
    ),
    H(
        "memfabric",
        rf"^(?P<date>{_DATE}) (?P<time>{_TIME}) (?P<level>error|warn|warning|info|debug) (?P<pid>[0-9]+) pid\[[0-9]+\] ",
        "Ascend memfabric/hybm (the ascend transfer backend): 'DATE TIME.us level PID pid[PID] [COMP file:N]', "
        "the level in lower case",
        (
            (
                "2025-09-22 20:20:40.102319 error 12789 pid[12789] [BM devmm_ioctl.cpp:122] svm advise failed:-1",
                {"level": "error", "pid": 12789, "log_ts": datetime(2025, 9, 22, 20, 20, 40, 102319)},
            ),
        ),
    ),
    H(
        "dmesg",
        # the kernel's ring buffer as dmesg prints it: seconds since boot, no wall-clock time (no time is read
        # from it); each stamp opens a kernel message, its indented continuation lines follow it (the OOM
        # killer's three messages, tranX#41: batch19/08; NVRM's, NVSentinel#155: batch19/04). UCX's bracketed
        # epoch seconds (ten digits and more, then its own [host:pid] bracket) are another family.
        r"^\[ {0,7}(?P<uptime>[0-9]{1,8}\.[0-9]{6})\] ",
        "the kernel's ring buffer (dmesg, journalctl -k -o short-monotonic): '[2059991.491542] Out of memory: …'",
        (
            (
                "[2059991.491542] Out of memory: Killed process 25315 (python3) total-vm:53312244kB",
                {
                    "log_ts": None,
                    "level": None,
                    "body": "Out of memory: Killed process 25315 (python3) total-vm:53312244kB",
                },
            ),
        ),
    ),
    H(
        "json",
        r'^\{"',
        "sgl-router --log-json and SGLang --log-requests-format json (keys read by split_prefix)",
    ),
    H(
        "requests",
        r"^(?:Receive|Finish|Receive OpenAI): obj=",
        "--log-requests with a bare %(message)s target (stdout or file): one request per line",
    ),
)


def strip_groups(regex: str) -> str:
    """``regex`` with its named groups made non-capturing (a match test, or one to join with others)."""
    return re.sub(r"\(\?P<\w+>", "(?:", regex)


# Bodies that are a known kind of record even without a header: they open a record too (a paste
# from `kubectl logs` or a pod without SGLang's header). A py-spy ``Process N:`` line right after a
# "Pyspy dump for PID" line stays in that record (SGLang's watchdog prints both).
TERMINATE_LINE = r"^terminate called after throwing an instance of "
WHAT_LINE = r"^\s*what\(\): "
# glibc's malloc checks (malloc_printerr): a broken heap found, the message printed and the process
# aborted (SIGABRT): "free(): invalid pointer", "double free or corruption (!prev)", "corrupted size vs.
# prev_size", "malloc(): unaligned tcache chunk detected"; older glibc wraps it in "*** Error in `prog': …".
GLIBC_ABORT = (
    r"^(?:\*\*\* Error in `[^`\n]*': )?"
    r"(?:(?:free|malloc|realloc|calloc|munmap_chunk|malloc_consolidate|_int_malloc|_int_free|tcache_thread_shutdown)"
    r"\(\): [a-z]|double free or corruption\b|corrupted size vs\. prev_size|corrupted double-linked list)"
)
# A shell prompt with its command in a paste ([root@host dir]# …, (venv) user@host:~/dir$ …, zsh's ✗/➜ …,
# $ …): what follows is that command's output
PROMPT = r"^\[[^\]\s]+@[^\]]+\][#$] |^(?:\([\w.-]+\) )*[\w.-]+@[\w.-]+:\S*[#$] |^[✗➜] |^\$ \S"
# A comment line pasted between log lines (a markdown heading, a shell comment, a case file's `# note:`)
COMMENT = r"^# "
NOTE = COMMENT + (  # a note pasted between log lines: one line, never continued
    # a terminal's own lines in a paste: ^C, a shell prompt with its command; what follows is another
    # stream's output
    rf"|^\^C\s*$|{PROMPT}"
    # a markdown fence, and the shell's word on a killed child: the output before it has ended
    r"|^\s*```[\w-]*\s*$|^Killed\s*$"
    # (a script's job report of it, "./entrypoint.sh: line 48: 27 Killed python3 -m …", and Chinese bash's "已杀死":
    # parsers/systemd.py SHELL_MESSAGES)
    r"|^(?:\S+: line \d+: +)?\d+ Killed\s+\S|^已杀死\s*$"
)
# A progress bar: tqdm's "desc: 12%|██   | 1/8 [00:00<00:04,  1.73it/s]", vLLM's "… 12% Completed | 1/8
# [00:00<00:04, …]". tqdm writes it to stderr on its own, never as a line of the logger's record above it.
PROGRESS_BAR = r"^[^\n]*?[0-9]{1,3}%[^\n]*?\| *[0-9]+/[0-9]+ \[[0-9]+:[0-9]{2}(?::[0-9]{2})?<"
# A debugger's or toolchain's own diagnostic line (gdb's "warning: could not find '.gnu_debugaltlink' file
# for …", run around the process): lowercase label, colon; one line of that tool's, no level of the log's.
TOOL_DIAGNOSTIC = r"^(?:warning|note): "
BODY_STARTS = (
    r"^(?:Decode|Prefill) (?:transfer|bootstrap) failed(?: for request| \.\.\.| …)",
    r"^Unexpected transfer worker error for room",
    r"^Scheduler hit an exception:",
    r"^Process [0-9]+: ",
    r"^Fatal Python error: ",  # CPython's fatal error handler, before faulthandler's thread stacks
    # the interpreter's own heads before a traceback it prints to stderr (sys.unraisablehook, atexit,
    # threading.excepthook): never a line of the logger's record above them
    r"^Exception ignored in(?: atexit callback)?: ",
    r"^Error in atexit\._run_exitfuncs:\s*$",
    r"^Exception in thread .+:\s*$",
    # a C++ exception that ended the process (std::terminate, torch's c10::Error in a watchdog thread);
    # "what():" alone when the paste starts there (after a "terminate called" line it continues it)
    TERMINATE_LINE,
    WHAT_LINE,
    GLIBC_ABORT,  # the process aborted: never the last line of the record (a traceback) before it
    r"^\S+:[0-9]+ - \"[A-Z]+ \S+ HTTP/[0-9.]+\" [0-9]{3}",
    r"^(?:Prefill|Decode) batch[.,] ",  # a batch line whose header was stripped (--log-requests pastes)
    NOTE,
    # a header of a logger no family knows: a bracketed tag before prose ([Gloo] Rank 1 …, [aiter]
    # import …; not a tagged key=value line, "[full] total=…", which is a body), a CANN error code
    # (EZ9999: ); it opens a record of its own rather than being glued onto the one before
    r"^\[[A-Za-z][\w.-]*\] [A-Za-z]\w*(?:[ ,.:]|$)",
    r"^[A-Z]{2}[0-9]{4}: ",
    PROGRESS_BAR,
    TOOL_DIAGNOSTIC,
    # torchrun's ChildFailedError table: each failed worker "[N]:" with its time, host, rank, exitcode
    # and pid indented below it is a record of its own (VLMEvalKit#1131, accelerate#2960: batch17/02, 03)
    r"^\[[0-9]+\]:\s*$",
)
PYSPY_MARKER = r"(?i)py-?spy dump"
BODY_START = "|".join(BODY_STARTS)

# Before the first record start of a stream, and after a blank line, a line of these shapes still
# continues the record before it: indented (frames, wrapped text), a traceback's parts, a py-spy
# thread header. Any other line there opens a record of its own.
CONTINUATION = (
    rf"^(?:{strip_groups(RAY_PREFIX[1:])})?"
    r"(?:[ \t]+\S|Traceback \(most recent call last\):|(?:Current thread|Thread) (?:0x[0-9A-Fa-f]+|[0-9]+) \("
    r"|(?:The above exception|During handling of the above exception)|Caused by:$"
    r"|[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning)(?::|$)"
    # Python's line for a bare `raise Exception(…)`: the type alone ("Exception: Capture cuda graph failed: CUDA
    # out of memory. …", sglang#5285, batch23/05)
    r"|Exception(?::|$)"
    # a C++ exception's report (c10::Error, terminate called … what():): where it was raised (its
    # `frame #N:` lines follow that line; after a blank line alone they are another paste's)
    r"|Exception raised from \S+ at )"
)

# A Python traceback's first line. It continues the record before it only when that record opened with a
# header or a known record start (a logger.exception message, "Scheduler hit an exception:") or when the
# line before it is one of Python's own lead-ins (``TRACEBACK_LEADS``); after a line of prose (a program's
# print, "Starting initial single prompt test run...") it opens a record of its own.
TRACEBACK_HEAD = rf"^(?:{strip_groups(RAY_PREFIX[1:])})?Traceback \(most recent call last\):"
# faulthandler's thread header (a fatal error's or a dump_traceback's stacks): like a traceback's first line, after
# a record opened by prose it opens a record of its own (batch15/07: a reporter's sentence, then the dump)
FAULTHANDLER_THREAD = r"^(?:Current thread|Thread) 0x[0-9A-Fa-f]+ \(most recent call first\):"
TRACEBACK_LEADS = (
    rf"^(?:{strip_groups(RAY_PREFIX[1:])})?(?:"
    r"During handling of the above exception, another exception occurred:"  # a chained exception
    r"|The above exception was the direct cause of the following exception:"
    r"|Exception in thread .*:"  # threading.excepthook
    # SGLang of 2024 logging its component's error with the traceback under it ("Exception in ModelRpcClient:\n"
    # + get_exception_traceback(): sglang#105, batch18/04; "Exception in ControllerSingle:", batch16/13)
    r"|Exception in [A-Z]\w*:"
    r"|Exception in callback .*"  # asyncio's loop exception handler
    r"|Process [A-Za-z][\w-]*:"  # multiprocessing's child: "Process SpawnProcess-1:"
    r"|Error in (?:atexit\._run_exitfuncs|sys\.excepthook):"
    r"|Exception ignored in: .*"  # sys.unraisablehook
    r"|future: <Task .*"  # asyncio: "Task exception was never retrieved" / "future: <Task finished …>"
    r")\s*$"
)


HEADER_START = "|".join(f"(?:{strip_groups(h.regex).removeprefix('^')})" for h in HEADERS if h.starts)
HEADER_START = rf"^(?:{strip_groups(RAY_PREFIX[1:])})?(?:{HEADER_START})"
# The headers of loggers that stamp each line (``Header.own_lines``), and what may still follow such a
# record unstamped: a traceback's parts, an indented line, a C++ frame of a c10 error.
OWN_LINES_START = "|".join(f"(?:{strip_groups(h.regex)})" for h in HEADERS if h.own_lines)
OWN_LINES_CONTINUATION = rf"(?:{CONTINUATION})|^frame #\d+: "
_HEADERS_WITH_FIELDS = [h for h in HEADERS if "(?P<" in h.regex]
_SGLANG = next(h for h in HEADERS if h.name == "sglang")
SGLANG_HEADER = _SGLANG.regex + "(?P<body>.*)"
# SGLang's own header alone, without its groups: the record start most lines of an engine carry.
SGLANG_START = strip_groups(_SGLANG.regex)
# A serving stack's own record start, whose lines are engine data even when no role or kind is read:
# SGLang's header, vLLM's logger's (after any worker prefix), or a Dynamo line (Z time, level padded to
# five) whose target is a crate of Dynamo's (dynamo_runtime::, dynamo_llm::) or, from `dynamo serve`'s
# Python loggers printed through the same formatter, a dotted module.function naming dynamo
# (serving.serve_dynamo_graph:, serve_dynamo.worker:), or the backend's own Python loggers relayed by a
# Dynamo worker through that formatter as `module.function:` (batch16/03, the SGLang decode worker:
# `2025-12-10T13:50:14.788089Z  INFO model_runner.load_model: Load weight end.`; a Rust target is `a::b`):
# the report then says what they show.
DYNAMO_TARGET = (
    rf"^{_DATE}T{_TIME}Z +(?:TRACE|DEBUG|INFO|WARN|ERROR) +(?:\S[^\n]*?\}}: )?"
    r"(?:dynamo_\w+::|(?:[\w<>]+\.)*[\w<>]*dynamo[\w<>]*(?:\.[\w<>]+)*: |[A-Za-z_]\w*\.[A-Za-z_<>][\w<>]*: )"
)
# text-generation-inference's launcher and router (Rust tracing, a Z time, the level padded to five, a span
# like `shard-manager:` before the target): `2024-04-18T22:43:58.111453Z  INFO shard-manager:
# text_generation_launcher: Waiting for shard to be ready... rank=0` (TGI#1763, batch19/12).
TGI_TARGET = (
    rf"^{_DATE}T{_TIME}Z +(?:TRACE|DEBUG|INFO|WARN|ERROR) +(?:[\w-]+: )?text_generation_(?:launcher|router)\b"
)
SERVING_START = "|".join(
    [SGLANG_START]
    + [
        rf"^(?:{strip_groups(RAY_PREFIX[1:])})?{strip_groups(h.regex)[1:]}"
        for h in HEADERS
        if h.name == "vllm"
    ]
    + [DYNAMO_TARGET, TGI_TARGET]
)
# Another program's header that SGLang's bracketed time also matches (log4j's ``[date time,ms] LEVEL``:
# Kafka, batch14/12): its lines are no serving stack's, whatever ``SERVING_START`` says.
FOREIGN_START = strip_groups(next(h.regex for h in HEADERS if h.name == "log4j"))
# The router's own header (an ISO time, then its level): never a kubectl --timestamps envelope.
ROUTER_START = strip_groups(next(h.regex for h in HEADERS if h.name == "router"))
_GLOG_LEVEL = {"D": "DEBUG", "I": "INFO", "W": "WARNING", "E": "ERROR", "F": "FATAL", "WARN": "WARNING"}
YEARLESS = sorted({h.name for h in _HEADERS_WITH_FIELDS if "month" in h.regex and "year" not in h.regex})


# A Python exception's own line (``Type: message``). Right after another, it is another exception's: the last
# lines of several tracebacks pasted together, each rank's or each operation's (sglang#29123, batch22/01: Gloo's
# ``RuntimeError: [… unbound_buffer.cc:78] Timed out waiting 7200000ms for recv operation to complete`` then the
# same for ``send``), never the message of the first.
EXCEPTION_LINE_START = r"^(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception): \S"
# An exception's own line whose message is empty: Python prints ``raise ImportError("\n[sgl_kernel] CRITICAL:
# …")`` as ``ImportError: `` and the message from the next line on (sglang pull 13948's CI log,
# batch23/03): the line after it is the message's first, never a record of its own, whatever tag it shows
# (SGLang's own header still opens one: another process's line).
EMPTY_EXCEPTION_LINE = r"^(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception):[ \t]*$"


def is_record_start(lines: pl.Expr, previous: pl.Expr | None = None) -> pl.Expr:
    """Boolean expression: does this line open a new logical record?

    ``lines`` is an expression over a ``str`` column of single lines (no trailing newline);
    ``previous`` the line before it in the same stream (None: unknown), which keeps a py-spy
    ``Process N:`` line in the "Pyspy dump for PID" record that announced it, a ``what():`` line in
    the "terminate called after throwing" record before it and the line after an exception line with an
    empty message (``EMPTY_EXCEPTION_LINE``: its message's first line) in that exception's record, and
    opens a record at an exception line that follows another (``EXCEPTION_LINE_START``). ANSI colour escapes are
    ignored; a null line is null.
    """
    clean = lines.str.replace_all(ANSI_ESCAPE, "")
    start = clean.str.contains(HEADER_START) | clean.str.contains(BODY_START)
    if previous is not None:  # (the marker is searched only after a "Process N:" line: a day has few)
        process = clean.str.starts_with("Process ")
        marked = pl.when(process).then(previous.str.contains(PYSPY_MARKER)).fill_null(False)
        start = start & ~(process & marked)
        # std::terminate's "what():" continues the "terminate called after throwing" line before it
        what = clean.str.contains(WHAT_LINE)
        start = start & ~(what & previous.str.contains(TERMINATE_LINE).fill_null(False))
        again = clean.str.contains(EXCEPTION_LINE_START) & previous.str.contains(EXCEPTION_LINE_START)
        start = start | again.fill_null(False)
        empty = previous.str.replace_all(ANSI_ESCAPE, "").str.contains(EMPTY_EXCEPTION_LINE).fill_null(False)
        start = start & ~empty
    return start


def _timestamp(date: pl.Expr, time: pl.Expr) -> pl.Expr:
    # HH:MM:SS[.fraction] with "." or ","; a fraction past microseconds is cut (ns → µs); a fraction
    # printed as milliseconds and microseconds apart (plog's 46.026.970) is one fraction.
    clock = time.str.replace(",", ".", literal=True)
    clock = clock.str.replace(r"^([0-9:]{8}\.[0-9]{3})\.([0-9]{3})$", "${1}${2}").str.slice(0, 15)
    return pl.concat_str([date, clock], separator=" ").str.strptime(
        pl.Datetime("us"), "%Y-%m-%d %H:%M:%S%.f", strict=False
    )


def _json_field(key: str, present: bool) -> pl.Expr:
    if not present:
        return pl.lit(None, pl.String)
    text = pl.col("text")
    # the JSON object on the record's first line: a bare line joined after it (TGI's `Error: WebserverFailed`
    # after its last JSON line, OPEA GenAIExamples#636, batch19/14) is no part of the object
    first = (
        pl.when(text.str.contains("\n", literal=True)).then(text.str.extract(r"^([^\n]*)", 1)).otherwise(text)
    )
    return pl.when(text.str.starts_with('{"')).then(first.str.json_path_match(f"$.{key}"))


# A request-metrics record (SGLang's --export-metrics-to-file) is dated by the meta_info keys it
# carries: Unix seconds, UTC (response_sent_to_client_ts ≈2025-12, request_finished_ts before).
METRICS_RECORD = '{"request_parameters"'
_EPOCH_KEYS = ("response_sent_to_client_ts", "request_finished_ts")


def _json_epoch(text: pl.Series, json_like: bool) -> pl.Expr:
    if not json_like or not text.str.starts_with(METRICS_RECORD).any():
        return pl.lit(None, pl.String)
    record = pl.col("text").str.starts_with(METRICS_RECORD)
    return pl.when(record).then(pl.coalesce(_json_field(key, True) for key in _EPOCH_KEYS))


def _json_timestamp(value: pl.Expr) -> pl.Expr:
    """``2025-10-29 21:49:19``, ``2025-10-29T21:49:19.123456`` or with a ``Z``/offset (dropped)."""
    m = value.str.extract_groups(
        rf"^(?P<date>{_DATE})[ T](?P<time>[0-9]{{2}}:[0-9]{{2}}:[0-9]{{2}}(?:\.[0-9]+)?)"
    )
    return _timestamp(m.struct.field("date"), m.struct.field("time"))


_TOKENS = ("DP", "PP", "TP", "EP")


# The header split tries SGLang's own family first, on every row: most lines of an engine carry it.
# A family listed before it refines it (its header opens with SGLang's ``[time]`` without ranks, as
# ``tests/test_prefix.py`` checks), so it is tried only on the rows SGLang claimed without ranks; the
# families after it only on the rows nothing claimed yet, each on the rows the ones before it left.
# Families that print only a level before the message (uvicorn's ``INFO:``, Python's ``LEVEL file.py:N:``)
# are read on the body, alone or after SGLang's header, and the body keeps them.
LEVEL_ONLY = ("uvicorn", "pylog")
_SPLIT = [h for h in _HEADERS_WITH_FIELDS if h.name not in LEVEL_ONLY]
_SGLANG_AT = _SPLIT.index(_SGLANG)
REFINES_SGLANG = _SPLIT[:_SGLANG_AT]
_AFTER_WORKER = [h for h in _SPLIT[_SGLANG_AT + 1 :] if h.after_worker]
DEFAULT_PG_RANK = r"^[^\n]*?\[PG (?:ID )?0 (?:PG GUID 0 ?)?\(default_pg\) Rank ([0-9]+)\]"
_FIELDS = ("date", "year", "month", "day", "time", "epoch", "level", "ranks", "rank", "pid", "tid", "host")
_CLAIM_SCHEMA = {"_i": pl.UInt32, "header": pl.String, **dict.fromkeys(_FIELDS, pl.String), "_cut": pl.UInt32}
_LEVEL_ONLY = [(h.name, h.regex) for h in HEADERS if h.name in LEVEL_ONLY]
_LEVEL_ONLY_REGEX = (
    "^(?:"
    + "|".join(
        f"(?:{r.removeprefix('^').replace('(?P<level>', f'(?P<l{k}>')})"
        for k, (_, r) in enumerate(_LEVEL_ONLY)
    )
    + ")"
)


def _which_regex(headers: list[Header]) -> str:
    """One pattern of every family of ``headers``, in order, a group ``f<k>`` each (their own groups
    made non-capturing): the group that matched names the first family a line opens with (an
    alternation prefers its first branch that matches, as ``_first_claim``'s order does)."""
    return "^(?:" + "|".join(f"(?P<f{k}>{strip_groups(h.regex)[1:]})" for k, h in enumerate(headers)) + ")"


def _first_claim(frame: pl.DataFrame, headers: list[Header], *, every_row: bool = False) -> pl.DataFrame:
    """Per row of ``frame`` (``_i``, ``src``) the first of ``headers`` (in order) its line opens with:
    ``_i``, ``header``, every field of ``_FIELDS`` (str, null where the family has none) and ``_cut``
    (the header's length in characters); rows none of them claims are left out (``every_row``: kept,
    null; one family). Dispatched by family: one pass of every family's pattern joined (``_which_regex``)
    says which family each row is of, then each family's own pattern reads its fields on its rows
    only, so a chunk compiles and scans only the families it holds."""
    if every_row or len(headers) == 1:
        return _claim(frame, headers[0], every_row=every_row)
    if frame.height == 0:
        return pl.DataFrame(schema=_CLAIM_SCHEMA)
    which = frame["src"].str.extract_groups(_which_regex(headers)).struct.unnest()
    family = which.select(
        pl.coalesce([pl.when(pl.col(f"f{k}").is_not_null()).then(pl.lit(k)) for k in range(len(headers))])
    ).to_series()
    parts = [
        _claim(frame.filter(family == k), headers[k]) for k in family.drop_nulls().unique().sort().to_list()
    ]
    if not parts:
        return pl.DataFrame(schema=_CLAIM_SCHEMA)
    return pl.concat(parts).sort("_i") if len(parts) > 1 else parts[0]


def _claim(frame: pl.DataFrame, header: Header, *, every_row: bool = False) -> pl.DataFrame:
    """``_first_claim`` of one family: its fields on the rows of ``frame`` its pattern matches (every
    row with ``every_row``, null where it does not)."""
    g = frame.select("_i", pl.col("src").str.extract_groups(f"^(?P<_head>{header.regex[1:]})").alias("h"))
    head = pl.col("h").struct.field("_head")
    if not every_row:
        g = g.filter(head.is_not_null())
    if header.tail:  # fields printed after the message, at the end of the first line
        first = frame.select("_i", pl.col("src").str.extract_groups(f"^[^\\n]*?{header.tail}").alias("t"))
        g = g.join(first, on="_i", how="left")

    def field(f: str) -> pl.Expr:
        if f"<{f}>" in header.regex:
            return pl.col("h").struct.field(f)
        if f"<{f}>" in header.tail:
            return pl.when(head.is_not_null()).then(pl.col("t").struct.field(f))
        return pl.lit(None, pl.String)

    return g.select(
        "_i",
        pl.when(head.is_not_null()).then(pl.lit(header.name)).alias("header"),
        *[field(f).alias(f) for f in _FIELDS],
        head.str.len_chars().cast(pl.UInt32).alias("_cut"),
    )


def _claims(src: pl.Series, open_to_all: pl.Series | None) -> pl.DataFrame:
    """Per row of ``src``, in order: the header family that claims it (``header``, null for none),
    its fields and ``_cut``. Rows where ``open_to_all`` is False (a Ray prefix was cut) may only be
    claimed by SGLang's header, one that refines it, or a family marked ``after_worker``."""
    frame = pl.DataFrame([pl.int_range(src.len(), dtype=pl.UInt32, eager=True).alias("_i"), src.alias("src")])
    out = _first_claim(frame, [_SGLANG], every_row=True).drop("_i")
    mine = out["header"].is_not_null()
    refine = frame.filter(mine & (out["ranks"] == ""))
    rest = frame.filter(~mine if open_to_all is None else ~mine & open_to_all)
    found = [_first_claim(refine, REFINES_SGLANG), _first_claim(rest, _SPLIT[_SGLANG_AT + 1 :])]
    if open_to_all is not None:
        found.append(_first_claim(frame.filter(~mine & ~open_to_all), _AFTER_WORKER))
    found = pl.concat(found)
    if found.height:
        out = out.with_columns(out[c].scatter(found["_i"], found[c]) for c in out.columns)
    return out


def split_prefix(text: pl.Series) -> pl.DataFrame:
    """Split each record's header from its body.

    Args:
        text: ``str`` Series, one logical record per element (may hold several lines; only the first
            line's header is read).

    Returns:
        A DataFrame with one row per element, in order: ``log_ts`` (``Datetime[us]`` without zone: the
        time as printed, local time for SGLang, UTC for the router; families that print no year get
        the year of the nearest dated row of ``text``, else ``log_ts`` is null and ``yearless`` keeps
        ``MM-DD HH:MM:SS.f`` for a later chunk to date), ``level`` (str or null), ``dp_rank, pp_rank,
        tp_rank, ep_rank`` (Int16 or null; a Ray/vLLM worker name's tokens where the header prints
        none), ``pid`` (Int32, where the header or a worker prefix prints it; glog's number is a
        thread id, not a pid), ``tid`` (Int64, a thread id: glog, NCCL, UCX, torch_npu), ``host``
        (str, a host the header names: NCCL, UCX), ``header`` (the family of ``HEADERS`` that matched, or
        null), ``body`` (the text after the header, ANSI escapes removed; the whole text when no
        header matched; a JSON line whole, with ``log_ts``/``level`` from its ``"timestamp"`` and
        ``"level"`` keys), ``yearless`` and ``printed_time`` (a time printed without a year or a date,
        as printed, where ``log_ts`` stays null).

    Never raises on any string input; nulls stay null.
    """
    df, json_like = _headers_cut(text)
    # a LEVEL_ONLY family's level, alone or after an SGLang header (the body keeps it: an access line),
    # all of them in one pass
    after = pl.when(pl.col("header") == "sglang").then(pl.col("body")).when(pl.col("header").is_null())
    df = df.with_columns(after.then(pl.col("src")).str.extract_groups(_LEVEL_ONLY_REGEX).alias("lo"))
    found = [pl.col("lo").struct.field(f"l{k}") for k in range(len(_LEVEL_ONLY))]
    uv = pl.coalesce(found)
    level_only = pl.coalesce(
        [pl.when(f.is_not_null()).then(pl.lit(n)) for f, (n, _) in zip(found, _LEVEL_ONLY, strict=True)]
    )
    json_ts = _json_timestamp(pl.col("js_ts")) if json_like else pl.lit(None, pl.Datetime("us"))
    if df["js_epoch"].is_not_null().any():
        json_ts = pl.coalesce(json_ts, epoch_seconds(pl.col("js_epoch")))
    epoch_ts = (
        epoch_seconds(pl.col("epoch")) if df["epoch"].is_not_null().any() else pl.lit(None, pl.Datetime("us"))
    )
    month = pl.col("month").str.pad_start(2, "0")
    date = pl.coalesce(pl.col("date"), pl.concat_str([pl.col("year"), month, pl.col("day")], separator="-"))
    yearless = pl.col("header").is_in(YEARLESS)
    md_time = pl.concat_str([month, pl.col("day")], separator="-")
    df = df.with_columns(
        pl.when(pl.col("header").is_not_null()).then(pl.col("header")).when(uv.is_not_null()).then(level_only)
        .when(pl.col("js_ts").is_not_null() | pl.col("js_level").is_not_null() | pl.col("js_epoch").is_not_null())
        .then(pl.lit("json"))
        .alias("header"),
        uv.alias("uv"),
        pl.coalesce(_timestamp(date, pl.col("time")), epoch_ts, json_ts).alias("dated_ts"),
        pl.when(yearless).then(pl.concat_str([md_time, pl.col("time")], separator=" ")).alias("yearless"),
        # a time of day printed without any date ([16:43:29 TP0])
        pl.when(pl.col("date").is_null() & pl.col("month").is_null() & pl.col("year").is_null())
        .then(pl.col("time")).alias("clock"),
    )  # fmt: skip
    log_ts, still_yearless = _dated(df)
    level = pl.coalesce(
        pl.col("level").replace(_GLOG_LEVEL),
        pl.col("uv"),
        pl.col("js_level").str.to_uppercase().replace({"WARN": "WARNING"}),
    )
    rank = _ranks(df)
    # PyTorch's default process group numbers its ranks as the global ranks: "[PG ID 0 PG GUID
    # 0(default_pg) Rank 3]" (torch 2.4+), "[PG 0 (default_pg) Rank 3]" (2.2-2.3), on the record's first line
    pg_rank = pl.lit(None, pl.Int16)
    if df["src"].str.contains("(default_pg) Rank ", literal=True).any():
        pg_rank = pl.col("src").str.extract(DEFAULT_PG_RANK, 1).cast(pl.Int16, strict=False)
    return df.select(
        log_ts.alias("log_ts"),
        level.alias("level"),
        rank["DP"].alias("dp_rank"),
        rank["PP"].alias("pp_rank"),
        pl.coalesce(
            rank["TP"],
            pl.col("rank").cast(pl.Int16, strict=False),
            pl.col("wrank").cast(pl.Int16, strict=False),
            pg_rank,
        ).alias("tp_rank"),
        rank["EP"].alias("ep_rank"),
        pl.coalesce("pid", "wpid").cast(pl.Int32, strict=False).alias("pid"),
        pl.col("tid").cast(pl.Int64, strict=False).alias("tid"),
        pl.col("host"),
        pl.col("header"),
        pl.col("body"),
        still_yearless.alias("yearless"),
        pl.when(log_ts.is_null()).then(pl.coalesce(still_yearless, pl.col("clock"))).alias("printed_time"),
    )


def epoch_seconds(epoch: pl.Expr) -> pl.Expr:
    """``1784621081.896649`` (Unix seconds with a fraction, as text: UCX, SGLang's wall-clock stamps)
    as a naive UTC Datetime[us], to the µs without a float's rounding; null where it is no number."""
    seconds = epoch.str.extract(r"^([0-9]+)", 1).cast(pl.Int64, strict=False)
    micros = (
        epoch.str.extract(r"\.([0-9]+)", 1).str.slice(0, 6).str.pad_end(6, "0").cast(pl.Int64, strict=False)
    )
    return pl.from_epoch(seconds * 1_000_000 + micros, time_unit="us")


def _headers_cut(text: pl.Series) -> tuple[pl.DataFrame, bool]:
    """``text`` (ANSI escapes removed) with ``src`` (a Ray prefix cut), the header claims (``_claims``),
    ``body`` and the JSON keys ``js_ts``/``js_level``; and whether any row is a JSON line."""
    df = pl.DataFrame({"text": text.cast(pl.String)})
    if df["text"].str.contains("\x1b", literal=True).any():
        df = df.with_columns(pl.col("text").str.replace_all(ANSI_ESCAPE, ""))
    json_like, ray_like = df.select(
        pl.col("text").str.starts_with('{"').any(), pl.col("text").str.starts_with("(").any().alias("ray")
    ).row(0)
    src = df.select(pl.col("text").str.replace(RAY_PREFIX, "")).to_series() if ray_like else df["text"]
    claims = _claims(src, (src == df["text"]).fill_null(True) if ray_like else None)
    df = pl.concat([df.with_columns(src.alias("src")), claims], how="horizontal")
    if ray_like:  # the worker's name gives the ranks its header does not print, its pid the pid
        worker = pl.col("text").str.extract_groups(RAY_PREFIX)
        tokens = worker.struct.field("worker").str.replace_all("_", " ", literal=True)
        printed = pl.when(pl.col("ranks") != "").then(pl.col("ranks"))
        df = df.with_columns(
            pl.coalesce(printed, tokens, pl.col("ranks")).alias("ranks"),
            worker.struct.field("wpid").alias("wpid"),
            worker.struct.field("worker").str.extract(WORKER_RANK, 1).alias("wrank"),
        )
    else:
        df = df.with_columns(pl.lit(None, pl.String).alias("wpid"), pl.lit(None, pl.String).alias("wrank"))
    # the body: the text after the header; a Ray-prefixed line that no header claimed stays whole, but
    # for a level-only family's line (uvicorn's ``INFO:     …`` access and lifecycle lines behind
    # ``(APIServer pid=1) ``): its body is the same as without the prefix, so it is classified the same
    body = pl.when(pl.col("_cut").is_not_null()).then(pl.col("src").str.slice(pl.col("_cut")))
    if ray_like:
        body = body.when(pl.col("src").str.contains(_LEVEL_ONLY_REGEX)).then(pl.col("src"))
    body = body.otherwise(pl.col("text") if ray_like else pl.col("src"))
    df = df.with_columns(
        body.alias("body"),
        # SGLang's and the router's ``timestamp``; Dynamo's (``DYN_LOGGING_JSONL``) and tracing's ``time``
        pl.coalesce(_json_field("timestamp", json_like), _json_field("time", json_like)).alias("js_ts"),
        _json_field("level", json_like).alias("js_level"),
        _json_epoch(df["text"], json_like).alias("js_epoch"),
    )
    if df["header"].eq("pylogging").any():
        df = _relogged_child(df)
    return _repeated_prefix_off(df, ray_like), json_like


def _relogged_child(df: pl.DataFrame) -> pl.DataFrame:
    """``df`` (``header``, ``ranks``, ``level``, ``body``) where a wrapper re-logs a child's lines through Python
    logging ("DATE TIME,ms - name - LEVEL - " then SGLang's own "[DATE TIME TP0] …": olmocr, batch5/11; a
    Qwen2-VL pipeline, sglang#2037, batch26/14): the line is the child's, so the ranks its SGLang header prints
    are the record's, and the wrapper's level (it re-logs every line of the child at one level) is no level
    of the child's line: not read. The wrapper's time stays the header's."""
    child = pl.col("body").str.extract_groups(_SGLANG.regex).struct.field("ranks")
    relogged = (pl.col("header") == "pylogging") & child.is_not_null()
    return df.with_columns(
        pl.when(relogged & (pl.col("ranks").fill_null("") == ""))
        .then(child)
        .otherwise(pl.col("ranks"))
        .alias("ranks"),
        pl.when(relogged).then(pl.lit(None, pl.String)).otherwise(pl.col("level")).alias("level"),
    )


# A Rust tracing line's target after its header (``dynamo_run::subprocess: ``): a path of two or more parts.
RUST_TARGET = r"^([A-Za-z_]\w*(?:::\w+)+: )"


def _repeated_prefix_off(df: pl.DataFrame, ray_like: bool) -> pl.DataFrame:
    """``df`` (``text``, ``body``) with the prefix a logger stamps on every line of a multi-line record
    taken off the body's later lines: the first line's header as printed (a format that repeats
    ``time LEVEL pid [ranks file:line]`` per line, sglang#9867), else its Ray/vLLM worker prefix
    (``(APIServer pid=N) ``); a later line without it stays as it is, and ``message`` keeps them all.
    Only records whose second line starts with that prefix are touched (split into lines, joined)."""
    multi = df["text"].str.contains("\n", literal=True).fill_null(False)
    if not multi.any():  # the common case: one line per record, nothing to take off
        return df
    at_multi = multi.arg_true()
    cut = _repeated_prefix_off_lines(df[at_multi], ray_like)
    return df.with_columns(df["body"].scatter(at_multi, cut["body"]))


def _repeated_prefix_off_lines(df: pl.DataFrame, ray_like: bool) -> pl.DataFrame:
    """``_repeated_prefix_off`` on records of more than one line."""
    text, body = pl.col("text"), pl.col("body")
    first = text.str.extract(r"^([^\n]*)", 1)
    header = first.str.slice(0, first.str.len_chars() - body.str.extract(r"^([^\n]*)", 1).str.len_chars())
    # a Rust tracing target after the header is stamped on every line too: dynamo-run relays its
    # subprocess's stderr line by line behind `TIME LEVEL dynamo_run::subprocess: ` (batch12/06)
    header = header + body.str.extract(RUST_TARGET, 1).fill_null("")
    worker = text.str.extract(f"({RAY_PREFIX})", 1) if ray_like else pl.lit(None, pl.String)
    second = text.str.extract(r"^[^\n]*\n([^\n]*)", 1)
    # the header when the later lines repeat it, else the worker prefix alone: a Ray Serve record's frames
    # repeat `(ServeReplica:app:deployment pid=N) ` but not its logger's time (ray#53267, batch21/02)
    own = (header.str.strip_chars() != "") & second.str.starts_with(header.str.strip_chars_end()).fill_null(
        False
    )
    lead = pl.when(own | worker.is_null()).then(header).otherwise(worker)
    df = df.with_columns(lead.alias("_lead"))
    stamped = df.select(
        (
            pl.col("_lead").is_not_null() & second.str.starts_with(pl.col("_lead").str.strip_chars_end())
        ).fill_null(False)
    ).to_series()
    if not stamped.any():
        return df.drop("_lead")
    at = stamped.arg_true()
    lines = (
        df.select(pl.col("_lead").gather(at), body.gather(at).str.split("\n"))
        .with_row_index("_r")
        .explode("body")
        .with_columns(pl.int_range(pl.len()).over("_r").alias("_k"))
    )
    lead, tight, line = pl.col("_lead"), pl.col("_lead").str.strip_chars_end(), pl.col("body")
    cut = (
        pl.when(pl.col("_k") == 0)
        # a relayed traceback's first line keeps no Rust target before its indented text (batch12/06)
        .then(
            pl.when(line.str.contains(RUST_TARGET + r"[ \t]"))
            .then(line.str.replace(RUST_TARGET, ""))
            .otherwise(line)
        )
        .when(line.str.starts_with(lead))
        .then(line.str.slice(lead.str.len_chars()))
        .when(line.str.starts_with(tight))
        .then(line.str.slice(tight.str.len_chars()).str.strip_chars_start())
        .otherwise(line)
    )
    joined = (
        lines.with_columns(cut.alias("body"))
        .group_by("_r", maintain_order=True)
        .agg(pl.col("body").str.join("\n"))
    )
    return df.with_columns(df["body"].scatter(at, joined["body"])).drop("_lead")


def _dated(df: pl.DataFrame) -> tuple[pl.Expr, pl.Expr]:
    """``log_ts`` and what stays ``yearless``: a row whose header prints no year takes the year of
    the nearest dated row of the frame (before it, else after it): the year the paste prints (the
    answer keys of ../shared/cases/batch5 read vLLM's year-less lines with the LMCache and Dynamo
    lines' year); a frame with no dated row leaves it as printed (``printed_time``)."""
    if not df.select(pl.col("yearless").is_not_null().any()).item():
        return pl.col("dated_ts"), pl.col("yearless")
    known_year = pl.col("dated_ts").dt.year().forward_fill().backward_fill()
    log_ts = pl.coalesce(pl.col("dated_ts"), date_yearless(pl.col("yearless"), known_year))
    return log_ts, pl.when(log_ts.is_null()).then(pl.col("yearless"))


def _ranks(df: pl.DataFrame) -> dict[str, pl.Expr]:
    """Per rank token (DP, PP, TP, EP): its number in ``ranks`` (Int16); a token no row prints is not
    searched for (most engines print TP and maybe EP only)."""
    printed = df.select(pl.col("ranks").str.contains(t, literal=True).any().alias(t) for t in _TOKENS).row(0)
    return {
        t: pl.col("ranks").str.extract(rf"(?:^| ){t}([0-9]+)", 1).cast(pl.Int16, strict=False)
        if seen
        else pl.lit(None, pl.Int16)
        for t, seen in zip(_TOKENS, printed, strict=True)
    }


def date_yearless(md_time: pl.Expr, year: pl.Expr) -> pl.Expr:
    """``MM-DD HH:MM:SS[.f]`` (``split_prefix``'s ``yearless``) with ``year`` (Int) as a naive
    Datetime[us]; null where either is null or the date does not exist (Feb 29 of another year)."""
    return _timestamp(year.cast(pl.String) + "-" + md_time.str.slice(0, 5), md_time.str.slice(6))
