"""What a py-spy stack is waiting in: frame patterns → wait class, backend and SGLang event loop, as data.

Every rule names the frame it recognises with a regex on the frame's function (and, where a bare
function name would be ambiguous, on its file), the class or backend it means, where such a frame
comes from, and a sample ``(function, file)`` that ``tests/test_pyspy.py`` checks against the rule.
To teach logcorr a new wait, add a row here; nothing else changes.

How a thread is classified (``parsers.pyspy.classify_stack``):

1. Rules come in four *levels*, strongest first: ``collective`` (a collective or point-to-point
   call, Python API or native entry point: the thread is inside that operation), ``transport``
   (the transport's own wait, e.g. gloo's ``UnboundBuffer::waitRecv``: only says "receiving" when no
   collective frame tells what for), ``device`` (a CUDA/NPU synchronisation) and ``wait`` (zmq
   poll, queue/lock/condition waits, sleep).
2. The class comes from the *innermost* frame matching a rule of the strongest level present, so a
   gloo broadcast dumped with ``--native`` (``waitRecv`` inside ``broadcast``) is ``broadcast``, and
   a bare ``RecvWork::wait`` over ``waitRecv`` is ``recv``. No rule matches → ``running``, unless
   py-spy printed the thread ``idle`` (``(idle)``, or ``"active": false`` in JSON): then ``idle``,
   never ``running``. An empty stack has no class (null).
3. ``wait_frame`` is the innermost frame whose rule gives that class (``waitRecv`` for a gloo recv).
4. The backend is the innermost frame matching a backend rule, anywhere on the stack.
5. The event loop is the innermost function matching ``EVENT_LOOP``.

Whether a stack is whole (``parsers.pyspy``: ``partial`` is false) is also decided here: its base
(outermost frame, native frames left aside when the stack has Python frames) must match an
``ENTRY_RULES`` row, where a thread or the interpreter starts running code.

The line shapes of a dump as pasted (``LINE_FORMATS``: marker, process, thread, frame, …, each with a
sample) are here too; ``parsers.pyspy`` reads each line as one of them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

LEVELS = ("collective", "transport", "device", "wait")
WAIT_CLASSES = (
    "all_reduce",
    "broadcast",
    "all_gather",
    "reduce_scatter",
    "all_to_all",
    "barrier",
    "send",
    "recv",
    "cuda_sync",
    "zmq_poll",
    "queue_wait",
    "sleep",
    "idle",
    "running",
)


@dataclass(frozen=True)
class WaitRule:
    """One frame pattern → wait class.

    ``function`` and ``file`` are Python regexes applied with ``re.search`` (``file=None``: any
    file); ``sample`` is a ``(function, file)`` pair the rule must match; ``origin`` says where the
    frame comes from (library, version).
    """

    name: str
    level: str
    wait_class: str
    function: str
    sample: tuple[str, str]
    origin: str
    file: str | None = None


@dataclass(frozen=True)
class BackendRule:
    """One frame pattern → communication backend (``pattern`` searched in function and file)."""

    name: str
    backend: str
    pattern: str
    sample: tuple[str, str]
    origin: str
    function_only: bool = False


_DIST_FILE = r"(?:^|/)(?:torch/distributed/|distributed/|distributed_c10d)"

WAIT_RULES: tuple[WaitRule, ...] = (
    # --- collective: the thread is inside this operation -------------------------------------
    WaitRule(
        "sglang_broadcast_pyobj",
        "collective",
        "broadcast",
        r"^(?:broadcast_pyobj|recv_requests)$",
        ("recv_requests", "managers/scheduler.py"),
        "SGLang Scheduler.recv_requests → utils broadcast_pyobj over the TP CPU group (all versions)",
    ),
    WaitRule(
        "all_reduce",
        "collective",
        "all_reduce",
        r"(?i)all_?reduce",
        ("c10d::ProcessGroupNCCL::allreduce", "libtorch_cuda.so"),
        "torch.distributed.all_reduce, SGLang parallel_state/pynccl/custom_all_reduce, ncclAllReduce",
    ),
    WaitRule(
        "reduce_scatter",
        "collective",
        "reduce_scatter",
        r"(?i)reduce_?scatter",
        ("_reduce_scatter_base", "torch/distributed/distributed_c10d.py"),
        "torch reduce_scatter(_tensor), _reduce_scatter_base, ncclReduceScatter",
    ),
    WaitRule(
        "all_gather",
        "collective",
        "all_gather",
        r"(?i)all_?gather",
        ("all_gather_into_tensor", "torch/distributed/distributed_c10d.py"),
        "torch all_gather, all_gather_into_tensor, _all_gather_base, all_gather_object, ncclAllGather",
    ),
    WaitRule(
        "all_to_all",
        "collective",
        "all_to_all",
        r"(?i)all_?to_?all",
        ("all_to_all_single", "torch/distributed/distributed_c10d.py"),
        "torch all_to_all(_single), ncclAllToAll (MoE expert parallel)",
    ),
    WaitRule(
        "broadcast",
        "collective",
        "broadcast",
        r"(?i)broadcast(?!_to\b|_tensors\b|_shapes\b)|bcast",
        ("broadcast", "torch/distributed/distributed_c10d.py"),
        "torch broadcast, broadcast_object_list, gloo::broadcast, ncclBroadcast/ncclBcast",
    ),
    WaitRule(
        "barrier",
        "collective",
        "barrier",
        r"(?i)barrier",
        ("monitored_barrier", "torch/distributed/distributed_c10d.py"),
        "torch barrier, monitored_barrier, ProcessGroup*::barrier",
    ),
    WaitRule(
        "p2p_recv",
        "collective",
        "recv",
        r"^(?:recv|irecv|recv_object|recv_object_list|recv_tensor_dict|_recv_object)$",
        ("recv_tensor_dict", "distributed/parallel_state.py"),
        "torch.distributed recv/irecv, SGLang GroupCoordinator.recv_object/recv_tensor_dict (PP)",
        file=_DIST_FILE,
    ),
    WaitRule(
        "p2p_recv_native",
        "collective",
        "recv",
        r"RecvWork|ncclRecv|recvAnysource",
        ("c10d::ProcessGroupGloo::RecvWork::wait", "libtorch_cpu.so"),
        "c10d ProcessGroupGloo::RecvWork::wait, ncclRecv (py-spy --native)",
    ),
    WaitRule(
        "p2p_send",
        "collective",
        "send",
        r"^(?:send|isend|send_object|send_object_list|send_tensor_dict|_send_object)$",
        ("send", "torch/distributed/distributed_c10d.py"),
        "torch.distributed send/isend, SGLang GroupCoordinator.send_object/send_tensor_dict (PP)",
        file=_DIST_FILE,
    ),
    WaitRule(
        "p2p_send_native",
        "collective",
        "send",
        r"SendWork|ncclSend",
        ("c10d::ProcessGroupGloo::SendWork::wait", "libtorch_cpu.so"),
        "c10d ProcessGroupGloo::SendWork::wait, ncclSend (py-spy --native)",
    ),
    # --- transport: gloo's own waits -------------------------------------------------------------
    WaitRule(
        "gloo_wait_recv",
        "transport",
        "recv",
        r"waitRecv",
        ("gloo::transport::tcp::UnboundBuffer::waitRecv", "libtorch_cpu.so"),
        "gloo transport (inside every gloo collective and recv; py-spy --native)",
    ),
    WaitRule(
        "gloo_wait_send",
        "transport",
        "send",
        r"waitSend",
        ("gloo::transport::tcp::UnboundBuffer::waitSend", "libtorch_cpu.so"),
        "gloo transport (py-spy --native)",
    ),
    # --- device: host waits for the GPU/NPU ------------------------------------------------------
    WaitRule(
        "torch_synchronize",
        "device",
        "cuda_sync",
        r"^synchronize$",
        ("synchronize", "torch/cuda/__init__.py"),
        "torch.cuda.synchronize, Stream/Event.synchronize, torch_npu",
        file=r"(?i)torch|cuda|npu",
    ),
    WaitRule(
        "driver_synchronize",
        "device",
        "cuda_sync",
        r"^cu(?:da)?(?:Event|Stream|Device|Ctx)Synchronize|^aclrtSynchronize|_local_scalar_dense",
        ("cuEventSynchronize", "libcuda.so.1"),
        "CUDA driver/runtime sync, .item() (_local_scalar_dense), Ascend aclrtSynchronize* (--native)",
    ),
    # --- wait: idle on a socket, queue, lock or timer --------------------------------------------
    WaitRule(
        "zmq_python",
        "wait",
        "zmq_poll",
        r"^(?:poll|_poll|select|recv\w*)$",
        ("recv_pyobj", "zmq/sugar/socket.py"),
        "pyzmq Socket.recv*/Poller.poll",
        file=r"(?:^|/)zmq/",
    ),
    WaitRule(
        "zmq_native",
        "wait",
        "zmq_poll",
        r"^zmq_poll|^zmq_msg_recv|^zmq_recv|^zmq::.*(?:poll|wait)",
        ("zmq_poll", "libzmq.so.5"),
        "libzmq (py-spy --native)",
    ),
    WaitRule(
        "queue_python",
        "wait",
        "queue_wait",
        r"^(?:get|wait|join|acquire|_wait_for_tstate_lock|_shutdown|result|recv|_recv|_recv_bytes|poll)$",
        ("get", "queue.py"),
        "queue.Queue.get, threading waits/joins, multiprocessing queues and pipes, Future.result",
        file=r"(?:^|/)(?:queue\.py|threading\.py|multiprocessing/(?:queues|connection|synchronize)\.py"
        r"|concurrent/futures/_base\.py)$",
    ),
    WaitRule(
        "queue_native",
        "wait",
        "queue_wait",
        r"^(?:PyThread_acquire_lock(?:_timed)?|pthread_cond_(?:timed)?wait|sem_(?:timed|clock)?wait"
        r"|__futex_abstimed_wait\w*|futex_wait\w*)$",
        ("PyThread_acquire_lock_timed", "python3.12"),
        "CPython lock acquire, pthread condition/semaphore waits (py-spy --native)",
    ),
    WaitRule(
        "sleep",
        "wait",
        "sleep",
        r"^(?:sleep|_sleep|time_sleep|pysleep|clock_nanosleep|nanosleep|usleep)$",
        ("clock_nanosleep", "libc.so.6"),
        "time.sleep (native frames), asyncio.sleep",
    ),
)

BACKEND_RULES: tuple[BackendRule, ...] = (
    BackendRule(
        "nccl",
        "nccl",
        r"(?i)nccl",
        ("all_reduce", "distributed/device_communicators/pynccl.py"),
        "ProcessGroupNCCL, SGLang pynccl (PyNcclCommunicator), ncclAllReduce, libnccl.so",
    ),
    BackendRule(
        "gloo",
        "gloo",
        r"(?i)gloo",
        ("c10d::ProcessGroupGloo::RecvWork::wait", "libtorch_cpu.so"),
        "ProcessGroupGloo, gloo::transport (py-spy --native)",
    ),
    BackendRule(
        "hccl",
        "hccl",
        r"(?i)hccl",
        ("c10d_npu::ProcessGroupHCCL::allreduce", "libtorch_npu.so"),
        "torch_npu ProcessGroupHCCL (Ascend)",
    ),
    BackendRule(
        "sglang_broadcast_pyobj",
        "gloo",
        r"^broadcast_pyobj$",
        ("broadcast_pyobj", "utils/common.py"),
        "implied: SGLang's recv_requests broadcasts over tp_cpu_group, a gloo group",
        function_only=True,
    ),
)


@dataclass(frozen=True)
class EntryRule:
    """One frame that can sit at the base of a whole stack: ``function``/``file`` regexes as in
    ``WaitRule``; ``native`` rules judge a stack with no Python frame at all (else the outermost
    Python frame is judged by the Python rules); ``sample`` must match; ``origin`` says who starts it."""

    name: str
    function: str
    sample: tuple[str, str]
    origin: str
    file: str | None = None
    native: bool = False


ENTRY_RULES: tuple[EntryRule, ...] = (
    EntryRule(
        "module",
        r"^<module>$",
        ("<module>", "pretrain_gpt.py"),
        "top level of a script, of python -c (<string>), of a multiprocessing spawn child (<string>:1)",
    ),
    EntryRule(
        "threading",
        r"^_bootstrap$",
        ("_bootstrap", "threading.py"),
        "threading.Thread: _bootstrap → _bootstrap_inner → run (every Python 3)",
        file=r"(?:^|/)threading\.py$",
    ),
    EntryRule(
        "runpy",
        r"^_run_module_as_main$",
        ("_run_module_as_main", "<frozen runpy>"),
        "python -m (runpy.py before 3.11, <frozen runpy> since)",
        file=r"runpy",
    ),
    EntryRule(
        "native_start",
        r"^(?:clone3?|start_thread|_start|__libc_start_main|__libc_start_call_main|main"
        r"|Py_BytesMain|Py_RunMain|pythread_wrapper|thread_run)$",
        ("start_thread", "libc.so.6"),
        "libc thread/process start, CPython's main and thread trampolines (py-spy --native)",
        native=True,
    ),
)

EVENT_LOOP = r"^event_loop_\w+$"
EVENT_LOOP_SAMPLE = "event_loop_overlap_disagg_decode"


def _compiled(rules) -> list[tuple]:
    return [(rule, re.compile(rule.function), re.compile(rule.file) if rule.file else None) for rule in rules]


def _first(compiled: list[tuple], function: str | None, file: str | None):
    """The first rule (table order) whose regexes find ``function`` and ``file`` (no file regex: any)."""
    if not function:
        return None
    for rule, fn_re, file_re in compiled:
        if fn_re.search(function) and (file_re is None or (file and file_re.search(file))):
            return rule
    return None


_COMPILED_WAIT = _compiled(WAIT_RULES)
_COMPILED_ENTRY = _compiled(ENTRY_RULES)
_COMPILED_BACKEND = [(rule, re.compile(rule.pattern)) for rule in BACKEND_RULES]
_EVENT_LOOP_RE = re.compile(EVENT_LOOP)


@lru_cache(maxsize=1 << 16)
def match_wait(function: str | None, file: str | None) -> WaitRule | None:
    """The first rule of ``WAIT_RULES`` (table order) matching one frame, or None."""
    return _first(_COMPILED_WAIT, function, file)


@lru_cache(maxsize=1 << 16)
def match_entry(function: str | None, file: str | None, native: bool = False) -> EntryRule | None:
    """The ``ENTRY_RULES`` row (of the Python or the ``native`` kind) matching one frame, or None."""
    return _first([c for c in _COMPILED_ENTRY if c[0].native == native], function, file)


@lru_cache(maxsize=1 << 16)
def match_backend(function: str | None, file: str | None) -> str | None:
    """The backend one frame shows (``nccl``, ``gloo``, ``hccl``), or None."""
    for rule, pat in _COMPILED_BACKEND:
        if (function and pat.search(function)) or (not rule.function_only and file and pat.search(file)):
            return rule.backend
    return None


def match_event_loop(function: str | None) -> bool:
    """Is this frame's function an SGLang scheduler event loop (``event_loop_*``)?"""
    return bool(function) and _EVENT_LOOP_RE.search(function) is not None


# What ``pyspy.parse_dump`` reads each line as (``DumpResult.line_kinds``) → what such a line is.
LINE_KINDS = {
    "blank": "an empty line (once ANSI codes and a compose/kubectl prefix are gone)",
    "marker": "SGLang's 'Pyspy dump for PID N:' log line",
    "process": "py-spy's 'Process N: command line'",
    "cmdline": "continuation of a process (or parent process) command line",
    "python": "py-spy's 'Python vX.Y.Z (exe)'",
    "parent": "py-spy's 'Parent Process N: command line' (--subprocesses)",
    "thread": "a thread header (py-spy's, or faulthandler's 'Thread 0x… (most recent call first):')",
    "frame": "a frame, or a last line cut short",
    "locals": "an Arguments:/Locals: header or a local (--locals)",
    "json": "part of a py-spy dump --json list",
    "elision": "a user's '...' inside a dump",
    "decoration": "prompt, py-spy command line, fence, heading, HTML tag, separator",
    "other": "text outside any dump, such as the log records around an embedded dump",
    "unparsed": "a line of unknown shape inside a dump",
}


@dataclass(frozen=True)
class LineFormat:
    """One line shape: ``pattern`` (Python regex, ``re.match`` on the cleaned line), where it comes
    from, and a sample line that must match (checked by the tests)."""

    name: str
    pattern: str
    since: str
    sample: str


LINE_FORMATS: tuple[LineFormat, ...] = (
    LineFormat(
        "marker",
        r".*?Pyspy dump for PID (?P<pid>\d+)(?: \((?P<cmd>[^)]*)\))?:\s*$",
        "SGLang pyspy_dump_schedulers (log message; the rank prefix of the line is a hint); the"
        " '(py-spy dump --native --pid N)' part since its native retry (2026)",
        "[2026-07-14 08:34:44] Pyspy dump for PID 187 (py-spy dump --native --pid 187):",
    ),
    LineFormat(
        "process",
        r"\s*Process (?P<pid>\d+):(?: (?P<cmd>.*))?$",
        "py-spy 0.1+; the command line may span lines (arguments with newlines) up to the Python line",
        "Process 309: sglang::scheduler_TP6",
    ),
    LineFormat(
        "python",
        r"\s*Python v(?P<version>\S+)(?: \((?P<exe>.*)\))?\s*$",
        "py-spy 0.1+",
        "Python v3.12.12 (/usr/bin/python3.12)",
    ),
    LineFormat(
        "parent",
        r"\s*Parent Process (?P<pid>\d+):(?: (?P<cmd>.*))?$",
        "py-spy 0.3.12+ --subprocesses",
        "Parent Process 12: python3 -m sglang.launch_server --disaggregation-mode decode",
    ),
    LineFormat(
        "thread",
        r"\s*Thread (?P<tid>0[xX][0-9a-fA-F]+|\d+|(?=\())(?: ?\((?P<state>idle|active\+gil|active|gil)\))?"
        r'(?:: "(?P<name>.*)")?\s*$',
        "py-spy 0.1+ (name since 0.2.2, none for a thread unknown to threading; hex id on macOS; the id left"
        " out of a paste: batch14/05;"
        " '(gil)' from print_trace)",
        'Thread 12816 (idle): "Thread-10 (watchdog_thread)"',
    ),
    LineFormat(
        "frame",
        r"(?P<indent>\s*)(?P<function>\S(?:.*\S)?) \((?P<file>[^()]*?)(?::(?P<line>\d+))?\)\s*$",
        "py-spy 0.1+ (4-space indent since 0.2.2, '\\t ' before); 'func (file)' without a line for native"
        " frames and --nolineno; '0xADDR (lib)' with --native",
        "    gloo::transport::tcp::UnboundBuffer::waitRecv (libtorch_cpu.so)",
    ),
    LineFormat(
        "native_bare",
        r"(?P<indent>\s*)(?P<function>(?:[A-Za-z_]\w*(?:<[^()\n]*>)?::)+~?[A-Za-z_]\w*(?:<[^()\n]*>)?)\s*$",
        "a --native C++ frame pasted without its '(lib.so)' (a reporter's shortened stack, sglang#36702,"
        " batch22/08): a qualified symbol alone on its line, read as a frame only inside a thread's frames",
        "at::native::nonzero_cuda_out_impl<bool>",
    ),
    LineFormat(
        "fh_thread",
        r"\s*(?:(?P<current>Current thread|Thread) (?P<tid>0[xX][0-9a-fA-F]+)|(?P<stack>Stack))"
        r" \(most recent call first\):\s*$",
        "CPython faulthandler (3.3+; dump_traceback, a fatal error, SIGABRT): the pthread id in hex, no name;"
        " 'Stack' when it dumps the faulting thread alone (all_threads=False, or no thread state to walk)",
        "Thread 0x00007f775a7fc640 (most recent call first):",
    ),
    LineFormat(
        "fh_frame",
        r'\s+File "(?P<file>[^"]*)", line (?P<line>\d+) in (?P<function>.*?)\s*$',
        "CPython faulthandler (no comma before 'in', unlike a traceback's frame); innermost first",
        '  File "/usr/lib/python3.10/queue.py", line 180 in get',
    ),
    LineFormat(
        "frame_cut",
        r"(?P<indent>\s*)(?P<function>\S(?:.*?\S)?) \((?P<file>[\w./<>@+-]*)(?::(?P<line>\d*))?$",
        "a frame line cut short by a paste",
        "    all_reduce (torch/distributed/distributed_c1",
    ),
    LineFormat(
        "elision",
        r"\s*(?:\.{3,}|…|[\[(<]\s*(?:\.{3,}|…|snip|truncated|omitted|elided|skipped))",
        "a user's cut inside a dump ('...', '…', '[... 20 frames ...]', '<snip>'): its stack is partial",
        "    ...",
    ),
    LineFormat(
        "locals_header",
        r"(?P<indent>\s+)(?P<section>Arguments|Locals)::?\s*$",
        "py-spy 0.2.2+ --locals ('::' until 0.3.8)",
        "        Arguments:",
    ),
    LineFormat(
        "local",
        r"(?P<indent>\s+)(?P<name>[^\s:]+): ?(?P<repr>.*)$",
        "py-spy 0.2.2+ --locals",
        "            self: <sglang.srt.managers.scheduler.Scheduler object at 0x7f3a5c1e2d50>",
    ),
    LineFormat("json_start", r"\s*\[\s*(?:\{.*)?$", "py-spy 0.2+ dump --json", "["),
    LineFormat(
        "separator",
        r"\s*(?:-{3,}|\*{3,}|_{3,})\s*$",
        "py-spy 0.3.12+ --subprocesses; markdown rule",
        "-" * 79,
    ),
    LineFormat("fence", r"\s*(?:```|~~~)", "markdown", "```text"),
    LineFormat(
        "heading",
        r"\s*(?:#{1,6}(?:\s|$)|\*\*[^*].*\*\*:?\s*$|__[^_].*__:?\s*$)",
        "markdown / case-file notes",
        "**Decode TP2**",
    ),
    LineFormat(
        "html",
        r"\s*</?(?:details|summary|pre|code|br|p|div|b|strong)\b[^>]*>",
        "GitHub issue HTML",
        "<details>",
    ),
    LineFormat(
        "command",
        r"(?:.*\bpy-spy\s+(?:dump|record|top)\b|\s*(?:\([\w.-]+\)\s*)?(?:[\w.-]+@[\w.-]+(?::\S*)?\s*)?[$#%>❯]\s+\S)",
        "shell prompt or a py-spy command line",
        "root@node1:~# py-spy dump --native --pid 309",
    ),
)
