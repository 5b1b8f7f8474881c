"""py-spy dumps → ``stacks`` rows (one per frame) and ``captures`` rows (one per capture × thread).

A *capture* is one ``py-spy dump`` of one process. The parser reads dumps wherever users have them:
files of several dumps, ``--subprocesses`` output, pastes with shell prompts, markdown fences and
``**headings**``, ``docker compose logs`` / ``kubectl --prefix`` prefixes, ANSI colours, SGLang's
watchdog output (``Pyspy dump for PID N:`` inside a log record), fragments that start mid-thread or
end mid-frame, and ``py-spy dump --json``. It is the mirror image of py-spy's ``src/dump.rs``: one
small reader per element (process header, thread, frame, locals), over one pass of the lines.

Line formats, each with the py-spy/SGLang version that prints it and a sample ``tests/test_pyspy.py``
parses (the regexes are in ``pyspy_rules.LINE_FORMATS``):

| format | sample | from |
|---|---|---|
| ``marker`` | ``[2025-10-29 11:25:58 TP6] Pyspy dump for PID 309:`` | SGLang ``pyspy_dump_schedulers``; ``… PID N (py-spy dump --native --pid N):`` since the native retry (2026) |
| ``process`` | ``Process 309: sglang::scheduler_TP6`` | py-spy 0.1+; the command line may span lines (arguments with newlines) up to the ``Python`` line |
| ``python`` | ``Python v3.12.3 (/usr/bin/python3.12)`` | py-spy 0.1+ |
| ``parent`` | ``Parent Process 12: python -m sglang.launch_server …`` | py-spy 0.3.12+ ``--subprocesses`` |
| ``thread`` | ``Thread 309 (active): "MainThread"`` | py-spy 0.1+ (no name: 0.1–0.2.1, or a thread unknown to ``threading``; hex id on macOS; ``(gil)`` from ``print_trace``) |
| ``frame`` | ``    _apply (penaltylib/min_new_tokens.py:78)`` | py-spy 0.1+; ``\\t `` indent until 0.2.1; ``func (file)`` without line for native frames and ``--nolineno``; ``0xADDR (lib)`` with ``--native`` |
| ``locals`` | ``        Arguments:`` / ``            self: <Scheduler at 0x7f…>`` | py-spy 0.2.2+ ``--locals`` (``Arguments::`` with a doubled colon until 0.3.8) |
| ``separator`` | ``-------…`` | py-spy 0.3.12+ ``--subprocesses`` between processes |
| ``json`` | ``[`` ``{ "pid": …, "thread_id": …, "frames": [ … ] }`` | py-spy 0.2+ ``dump --json``: keys optional (``pid``/``thread_name``/``process_info`` 0.3+, ``is_entry`` 0.3.x+, ``is_shim_entry`` 0.4.1+) |

Every line of the input gets one kind (``DumpResult.line_kinds``, aligned with ``text.splitlines()``):
``blank``, ``marker``, ``process``, ``cmdline`` (continuation of a process command line),
``python``, ``parent``, ``thread``, ``frame``, ``locals``, ``json``, ``elision`` (a user's ``...``
inside a dump), ``decoration`` (prompt,
``py-spy`` command line, fence, heading, HTML tag, separator), ``other`` (text outside any dump, such
as the log records around an embedded dump: kept in ``DumpResult.other_lines``) or ``unparsed`` (a
line of unknown shape inside a dump: kept in ``DumpResult.unparsed_lines``). Nothing is dropped.

Choices worth knowing:

- A thread without frames (``Thread 4076 (idle)``) gives one ``stacks`` row with ``depth`` 0 and
  null ``function``/``file``/``line``/``is_native`` (find them with ``function IS NULL``), and one
  ``captures`` row with ``n_frames`` 0, null ``wait_class``.
- The grouped form (``Thread 686181 (active): "MainThread"`` … ``Thread 686184 (active):
  "MainThread"`` in a row, then one stack): py-spy output of processes sharing a stack, or a paste
  so. Each header of the run gets the stack when it names the same thread as the header that has
  it; unnamed headers in a row are threads running no Python code and keep their empty stack.
- A process has one main thread: a second ``MainThread`` (another id) in one dump is another
  process whose ``Process`` line is not shown, so it opens a capture of its own.
- ``partial`` is per thread: the stack is cut short. It is false only when the stack's base is a
  thread or interpreter entry (``pyspy_rules.ENTRY_RULES``: ``<module>``, threading's
  ``_bootstrap``, runpy, or with only native frames libc's ``start_thread``/``clone``…) and nothing
  else cut it: frames seen before any ``Thread`` line (a paste that starts mid-thread; they form a
  thread with null ``thread_id``, ``depth`` counting from the first frame shown), a last line cut
  short (kept whole as a frame: ``function`` = the text, ``file`` null when unreadable), an elision
  line (``...``) with frames after it, the last thread of a cut JSON. A thread without frames is
  whole. A missing ``Process`` line does not make a stack partial; it leaves ``pid`` null.
- ``pid`` comes from the ``Process`` line, else the SGLang marker, else ``pid_hint``; never from a
  thread id (equal to the pid only for the main thread, only on Linux).
- ``wait_class`` of a thread py-spy printed ``idle`` is never ``running`` (``idle`` when no wait
  rule matches).
- A capture without any thread yields no rows (its lines are still counted).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

import polars as pl

from logcorr.schema import CAPTURES as CAPTURES_TABLE
from logcorr.schema import RANK_COLUMNS
from logcorr.schema import STACKS as STACKS_TABLE

from . import roles
from .prefix import HEADER_START, RAY_PREFIX, SGLANG_HEADER
from .pyspy_rules import LEVELS, match_backend, match_entry, match_event_loop, match_wait
from .pyspy_rules import LINE_FORMATS as LINE_FORMATS
from .pyspy_rules import LINE_KINDS as LINE_KINDS

STACKS = STACKS_TABLE.schema
CAPTURES = CAPTURES_TABLE.schema

_RE = {f.name: re.compile(f.pattern) for f in LINE_FORMATS}
_DECORATIONS = ("separator", "fence", "heading", "html", "command")

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?")
_LINE_PREFIXES = re.compile(r"^(?:[A-Za-z0-9][\w.-]*\s+\| ?|\[pod/[^\]\s]+\] )")  # docker compose, kubectl
_LOG_HEADER = re.compile(HEADER_START)
_RAY_PREFIX = re.compile(RAY_PREFIX)
_SGLANG_HEADER = re.compile(SGLANG_HEADER)
_TITLE = re.compile(r"sglang::\w+")
_TITLE_RANK = re.compile(r"(?:^|[_ ])(ATTN_CP|MOE_DP|DP|PP|TP|EP)(\d+)(?=[_ ]|$)")
_ROLE = re.compile(roles.MODE)
_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
_C_SOURCE = re.compile(r"\.(?:c|cc|cpp|cxx|h|hh|hpp|cu|cuh|rs|s|S)$")
_LOOKAHEAD = 200
_JSON_FIRST = frozenset('{}[]"-0123456789tfn,')


class PyspyError(ValueError):
    """Invalid arguments to a py-spy parser function (never raised for bad input text)."""


@dataclass
class DumpResult:
    """What ``parse_dump`` found.

    ``frames``: ``stacks`` rows (schema ``STACKS``). ``captures``: one row per capture × thread
    (schema ``CAPTURES``). ``unparsed_lines``: raw lines of unknown shape inside a dump.
    ``other_lines``: raw non-blank lines outside any dump that are not decorations (log records
    around an embedded dump, prose). ``line_kinds``: one of ``LINE_KINDS`` per line of
    ``text.splitlines()``. ``format``: ``text``, ``json``, ``text+json`` or ``none``.
    """

    frames: pl.DataFrame
    captures: pl.DataFrame
    unparsed_lines: list[str]
    other_lines: list[str] = field(default_factory=list)
    line_kinds: list[str] = field(default_factory=list)
    format: str = "none"


@dataclass
class Classification:
    """The wait of one thread: see ``parsers/pyspy_rules.py`` for the rules."""

    wait_class: str | None
    backend: str | None
    event_loop: str | None
    wait_frame: str | None
    innermost: str | None
    fingerprint: str


# --- small value helpers ----------------------------------------------------------------------


def _int_in(value, bits: int) -> int | None:
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError):
        return None
    limit = 1 << (bits - 1)
    return number if -limit <= number < limit else None


def _thread_id(text) -> int | None:
    """py-spy prints the OS thread id (decimal) or, without one, the pthread id in hex; Int64 holds
    both (a u64 above 2**63 is stored as its two's-complement value)."""
    try:
        number = int(text, 16) if isinstance(text, str) and text[:2].lower() == "0x" else int(text)
    except (TypeError, ValueError, OverflowError):
        return None
    if 1 << 63 <= number < 1 << 64:
        number -= 1 << 64
    return number if -(1 << 63) <= number < 1 << 63 else None


def _is_native(function: str, file: str | None, line: int | None) -> bool | None:
    if function.startswith("0x"):
        return True
    if file is None:
        return True if "::" in function else None
    if file.endswith((".py", ".pyw", ".pyx", ".pyi")) or (file.startswith("<") and file.endswith(">")):
        return False
    if line is not None:
        return bool(_C_SOURCE.search(file))
    return True


def _frame_text(function: str | None, file: str | None, line: int | None) -> str | None:
    if function is None:
        return None
    if file is None:
        return function
    return f"{function} ({file}:{line})" if line is not None else f"{function} ({file})"


def _as_utc(value) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError as exc:
            raise PyspyError(
                f"capture_ts {value!r} is not an ISO 8601 time; try '2026-01-29T13:12:37Z'"
            ) from exc
    if not isinstance(value, datetime):
        raise PyspyError(f"capture_ts must be a datetime or an ISO 8601 string, not {type(value).__name__}")
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _log_time(date: str, time: str) -> datetime | None:
    clock, _, frac = time.replace(",", ".").partition(".")
    try:
        stamp = datetime.fromisoformat(f"{date} {clock}")
    except ValueError:
        return None
    micros = int((frac + "000000")[:6]) if frac.isdigit() else 0
    return stamp.replace(microsecond=micros)


def _ranks_from_tokens(text: str) -> dict[str, int]:
    ranks: dict[str, int] = {}
    for token, number in _TITLE_RANK.findall(text):
        column = {"DP": "dp_rank", "PP": "pp_rank", "TP": "tp_rank", "EP": "ep_rank"}.get(token)
        value = _int_in(number, 16)
        if column and value is not None:
            ranks[column] = value
    return ranks


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _clean(line: str) -> str:
    line = _ANSI.sub("", line)
    return _LINE_PREFIXES.sub("", line, count=1).rstrip("\r")


# --- classification ------------------------------------------------------------------------------


def fingerprint(frames: Sequence[tuple]) -> str:
    """Stable 16-hex-digit hash of a stack's ``(function, file)`` sequence, innermost first.

    Line numbers are left out and hex addresses in function names become ``0x?``, so one code path
    in two processes (different ASLR bases) hashes alike. An empty stack hashes to ``e3b0c44298fc1c14``.
    """
    text = "\n".join(
        f"{_ADDRESS.sub('0x?', frame[0] or '')}\x1f{frame[1] or ''}"
        for frame in frames
        if frame[0] is not None
    )
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def classify_stack(frames: Sequence[tuple], state: str | None = None) -> Classification:
    """Classify one thread's stack.

    Args:
        frames: ``(function, file, line)`` tuples (extra items ignored), innermost first; a frame
            with a null function (a frameless thread's placeholder row) is skipped.
        state: the thread's state as py-spy printed it (``idle``, ``active``, ``active+gil``).

    Returns:
        A ``Classification``: ``wait_class`` (one of ``pyspy_rules.WAIT_CLASSES``; when no rule
        matches, ``idle`` if py-spy called the thread idle, else ``running``; null for an empty
        stack), ``backend`` (``nccl``/``gloo``/``hccl`` or
        null), ``event_loop`` (SGLang ``event_loop_*`` function or null), ``wait_frame`` and
        ``innermost`` as ``"func (file:line)"``, ``fingerprint``.
    """
    real = [f for f in frames if f[0] is not None]
    best: dict[str, tuple] = {}  # level → (rule, index) of its innermost match
    backend = event_loop = None
    rules = []
    for index, frame in enumerate(real):
        function, file = frame[0], frame[1]
        rule = match_wait(function, file)
        rules.append(rule)
        if rule is not None and rule.level not in best:
            best[rule.level] = (rule, index)
        if backend is None:
            backend = match_backend(function, file)
        if event_loop is None and match_event_loop(function):
            event_loop = function
    wait_class = wait_frame = None
    if real:
        wait_class = "idle" if state == "idle" else "running"
        for level in LEVELS:
            if level in best:
                wait_class = best[level][0].wait_class
                index = next(i for i, r in enumerate(rules) if r is not None and r.wait_class == wait_class)
                wait_frame = _frame_text(*real[index][:3])
                break
    innermost = _frame_text(*real[0][:3]) if real else None
    return Classification(wait_class, backend, event_loop, wait_frame, innermost, fingerprint(real))


class _Thread:
    __slots__ = ("tid", "name", "state", "frames", "partial", "elided", "shares_next")

    def __init__(self, tid, name, state, partial=False):
        self.tid, self.name, self.state = tid, name, state
        self.frames: list[list] = []  # [function, file, line, is_native, locals lines | None]
        self.partial = partial  # cut: starts mid-thread, last frame cut, an elision among its frames
        self.elided = False  # an elision line after its frames (partial if frames follow)
        self.shares_next: _Thread | None = None  # grouped form: the next header, whose stack it shares

    def whole(self) -> bool:
        """Not cut, and the base is a thread or interpreter entry (``pyspy_rules.ENTRY_RULES``).
        An empty stack (py-spy prints threads running no Python code so) is whole."""
        if self.partial:
            return False
        if not self.frames:
            return True
        python = [f for f in self.frames if f[3] is not True]
        base = python[-1] if python else self.frames[-1]
        return match_entry(base[0], base[1], native=not python) is not None


class _Capture:
    def __init__(self):
        self.pid = self.marker_pid = self.parent_pid = None
        self.cmd: list[str] = []
        self.parent_cmd: list[str] = []
        self.python_version = None
        self.marker_ts: datetime | None = None
        self.marker_ranks: dict[str, int] = {}
        self.threads: list[_Thread] = []
        self.has_process = self.has_python = self.from_marker = self.is_json = False
        self.another_process = False  # opened by a second MainThread: pid_hint is not its pid


class _Reader:
    """One pass over the lines; ``kinds[i]`` is set exactly once for every line."""

    def __init__(self, text: str):
        self.raw = text.splitlines()
        self.lines = [_clean(line) for line in self.raw]
        self.kinds: list[str | None] = [None] * len(self.raw)
        self.captures: list[_Capture] = []
        self.cap: _Capture | None = None
        self.thread: _Thread | None = None
        self.in_locals = False
        self.frame_indent = 0
        self.after_break = True  # last line was blank/decoration (or start of text)
        self.last_kind: str | None = None  # kind of the last non-blank line

    # state helpers
    def close(self):
        self.cap, self.thread, self.in_locals = None, None, False

    def open(self) -> _Capture:
        self.close()
        self.cap = _Capture()
        self.captures.append(self.cap)
        return self.cap

    def ensure_capture(self) -> _Capture:
        if self.cap is None:
            self.open()  # a dump that starts after its header: its pid is unknown
        return self.cap

    def run(self):
        i, n = 0, len(self.lines)
        while i < n:
            if self.kinds[i] is None:
                i = self.line(i)
            else:
                i += 1
        self.share_grouped()
        return self

    def share_grouped(self):
        """The grouped form: headers in a row without frames, then one stack, each header naming
        the same thread (``"MainThread"`` of several processes): every header gets the stack. Headers
        without a name or with another name keep their empty stacks (py-spy prints a thread running
        no Python code so, e.g. ``Thread 4076 (idle)``)."""
        threads = [t for cap in self.captures for t in cap.threads]
        for thread in reversed(threads):  # the stack travels back along a run of headers
            nxt = thread.shares_next
            if nxt is None or thread.frames or not nxt.frames or thread.tid == nxt.tid:
                continue
            if thread.name is None or thread.name != nxt.name:
                continue
            thread.frames = [list(frame) for frame in nxt.frames]
            thread.partial, thread.elided = nxt.partial, nxt.elided

    def line(self, i: int) -> int:
        """Read line ``i``; return the index of the next unread line."""
        line = self.lines[i]
        if not line.strip():
            self.kinds[i] = "blank"
            self.after_break = True
            return i + 1
        kind = self.classify_line(i, line)
        self.kinds[i] = self.kinds[i] or kind
        self.after_break = kind in ("decoration",)
        self.last_kind = kind
        return i + 1

    def classify_line(self, i: int, line: str) -> str:
        if "Pyspy dump for PID" in line and (m := _RE["marker"].match(line)):
            return self.marker(line, m)
        if line.lstrip().startswith("[") and _RE["json_start"].match(line) and self.json_block(i):
            return self.kinds[i]
        if _LOG_HEADER.match(line):
            self.close()
            return "other"
        if m := _RE["process"].match(line):
            return self.process(i, m)
        if m := _RE["python"].match(line):
            return self.python(m)
        if m := _RE["parent"].match(line):
            return self.parent(i, m)
        if m := _RE["thread"].match(line):
            return self.thread_header(m)
        if self.cap is not None and _RE["elision"].match(line):
            return self.elision()
        if self.thread is not None and self.thread.frames and (m := _RE["locals_header"].match(line)):
            if _indent(line) > self.frame_indent:
                self.in_locals = True
                self.thread.frames[-1][4] = (self.thread.frames[-1][4] or []) + [
                    line.strip().rstrip(":") + ":"
                ]
                return "locals"
        if self.in_locals and _indent(line) > self.frame_indent and (m := _RE["local"].match(line)):
            self.thread.frames[-1][4].append(f"{m['name']}: {m['repr']}")
            return "locals"
        if (m := _RE["frame"].match(line)) and self.frame_allowed(m):
            return self.frame(m)
        for name in _DECORATIONS:
            if _RE[name].match(line):
                if name == "separator":
                    self.close()
                return "decoration"
        if self.thread is not None and _indent(line) > 0 and self.is_last_of_block(i):
            return self.cut_frame(line)
        if self.cap is not None and not self.after_break:
            return "unparsed"
        self.close()
        return "other"

    def frame_allowed(self, m: re.Match) -> bool:
        """Inside a thread any frame-shaped line is a frame (unindented ones only right after
        another dump line); outside, only an indented one whose file part has no spaces starts a
        thread (so C++ ``frame #0: … (0x… in lib.so)`` lines and prose stay out)."""
        if self.thread is not None:
            return bool(m["indent"]) or not self.after_break
        return bool(m["indent"]) and not any(ch.isspace() for ch in m["file"])

    def is_last_of_block(self, i: int) -> bool:
        nxt = self.lines[i + 1] if i + 1 < len(self.lines) else ""
        return not nxt.strip() or _indent(nxt) == 0

    # elements
    def marker(self, line: str, m: re.Match) -> str:
        cap = self.open()
        cap.from_marker = True
        cap.marker_pid = _int_in(m["pid"], 32)
        body = _RAY_PREFIX.sub("", line, count=1)
        if h := _SGLANG_HEADER.match(body):
            cap.marker_ts = _log_time(h["date"], h["time"])
            cap.marker_ranks = _ranks_from_tokens(h["ranks"])
        return "marker"

    def process(self, i: int, m: re.Match) -> str:
        cap = self.cap
        if cap is None or cap.has_process or cap.has_python or cap.threads or cap.is_json:
            cap = self.open()
        self.thread, self.in_locals = None, False
        cap.has_process = True
        cap.pid = _int_in(m["pid"], 32)
        cap.cmd = [m["cmd"] or ""]
        end = self.find_python(i)
        for j in range(i + 1, end or i + 1):
            self.kinds[j] = "cmdline"
            cap.cmd.append(self.lines[j])
        return "process"

    def find_python(self, i: int) -> int | None:
        """A command line with newlines runs on until the ``Python v`` line (looked for in the next
        ``_LOOKAHEAD`` lines, never past another dump header)."""
        for j in range(i + 1, min(len(self.lines), i + 1 + _LOOKAHEAD)):
            line = self.lines[j]
            if _RE["python"].match(line):
                return j
            if _RE["thread"].match(line) or _RE["process"].match(line) or "Pyspy dump for PID" in line:
                return None
        return None

    def python(self, m: re.Match) -> str:
        cap = self.cap
        if cap is None or cap.has_python or cap.threads or cap.is_json:
            cap = self.open()
        self.thread, self.in_locals = None, False
        cap.has_python = True
        cap.python_version = m["version"]
        return "python"

    def parent(self, i: int, m: re.Match) -> str:
        cap = self.ensure_capture()
        cap.parent_pid = _int_in(m["pid"], 32)
        cap.parent_cmd = [m["cmd"] or ""]
        j = i + 1
        while j < min(len(self.lines), i + 1 + _LOOKAHEAD) and self.lines[j].strip():
            line = self.lines[j]
            if any(_RE[name].match(line) for name in ("thread", "process", "python", "frame")):
                break
            self.kinds[j] = "cmdline"
            cap.parent_cmd.append(line)
            j += 1
        return "parent"

    def thread_header(self, m: re.Match) -> str:
        cap = self.ensure_capture()
        state = {"gil": "active+gil"}.get(m["state"], m["state"])
        thread = _Thread(_thread_id(m["tid"]), m["name"], state)
        previous = self.thread
        if previous is not None and not previous.frames and self.last_kind == "thread":
            previous.shares_next = thread  # maybe the grouped form: see share_grouped
        other_main = any(t.name == "MainThread" and t.tid != thread.tid for t in cap.threads)
        if thread.name == "MainThread" and other_main:
            cap = self.open()  # a process has one main thread: this is another process, header not shown
            cap.another_process = True
        self.thread = thread
        cap.threads.append(thread)
        self.in_locals = False
        return "thread"

    def elision(self) -> str:
        """A user's cut (``...``): the stack it sits in is partial (after the last frame shown it
        may instead cut whole threads: then the stack is partial only if frames follow)."""
        if self.thread is not None:
            if self.thread.frames:
                self.thread.elided = True
            else:
                self.thread.partial = True
        self.in_locals = False
        return "elision"

    def orphan_thread(self) -> _Thread:
        cap = self.ensure_capture()
        self.thread = _Thread(None, None, None, partial=True)
        cap.threads.append(self.thread)
        return self.thread

    def frame(self, m: re.Match) -> str:
        thread = self.thread or self.orphan_thread()
        if not thread.frames:
            self.frame_indent = len(m["indent"])
        line = _int_in(m["line"], 32) if m["line"] else None
        file = m["file"]
        thread.partial = thread.partial or thread.elided
        thread.frames.append([m["function"], file, line, _is_native(m["function"], file, line), None])
        self.in_locals = False
        return "frame"

    def cut_frame(self, line: str) -> str:
        if m := _RE["frame_cut"].match(line):
            function, file = m["function"], m["file"] or None
            number = _int_in(m["line"], 32) if m["line"] else None
        else:
            function, file, number = line.strip(), None, None
        self.thread.frames.append([function, file, number, _is_native(function, file, number), None])
        self.thread.partial = True
        self.in_locals = False
        return "frame"

    # JSON
    def json_block(self, i: int) -> bool:
        """Read a ``py-spy dump --json`` list starting at line ``i``; False when it is not one."""
        first = self.lines[i].strip()
        if first == "[":
            nxt = next((ln.strip() for ln in self.lines[i + 1 : i + 3] if ln.strip()), "")
            if not nxt.startswith(("{", "]")):
                return False
        elif not first.replace(" ", "").startswith(("[{", "[]")):
            return False
        end, snapshots, complete = self.scan_json(i)
        value, used = None, 0
        if complete:
            try:
                value, used = json.loads("\n".join(self.lines[i:end])), end - i
            except ValueError:
                value = None
        if value is None:
            value, used = self.repair_json(i, end, snapshots)
        threads = [t for t in value if _is_json_thread(t)] if isinstance(value, list) else []
        if _is_json_thread(value):
            threads = [value]
        if value is None or (not threads and value != []):
            for j in range(i, end):
                self.kinds[j] = "unparsed"
            self.close()
            return True
        for j in range(i, i + used):
            self.kinds[j] = "json"
        for j in range(i + used, end):
            self.kinds[j] = "unparsed"
        self.json_captures(threads, partial=not complete or used < end - i)
        return True

    def scan_json(self, i: int):
        """Follow brackets (outside strings) from line ``i``; stop where they balance, at a line that
        cannot continue pretty-printed JSON, or at the end. Returns ``(end, snapshots, complete)``:
        ``snapshots[k]`` is the open-bracket stack after line ``i + k`` (None inside a string)."""
        stack: list[str] = []
        in_str = escape = False
        snapshots: list[str | None] = []
        j = i
        while j < len(self.lines):
            line = self.lines[j]
            stripped = line.strip()
            if j > i and not in_str and stripped and stripped[0] not in _JSON_FIRST:
                return j, snapshots, False
            for ch in line:
                if in_str:
                    if escape:
                        escape = False
                    elif ch == "\\":
                        escape = True
                    elif ch == '"':
                        in_str = False
                elif ch == '"':
                    in_str = True
                elif ch in "[{":
                    stack.append(ch)
                elif ch in "]}":
                    if stack and stack[-1] == ("[" if ch == "]" else "{"):
                        stack.pop()
                    else:
                        return j + 1, snapshots + [None], False
            snapshots.append(None if in_str else "".join(stack))
            j += 1
            if not stack and not in_str:
                return j, snapshots, True
        return j, snapshots, False

    def repair_json(self, i: int, end: int, snapshots: list) -> tuple:
        """Parse the longest prefix of a cut JSON dump that closes cleanly (at most 64 tries)."""
        tries = 0
        for k in range(end - 1, i - 1, -1):
            stack = snapshots[k - i] if k - i < len(snapshots) else None
            if stack is None or not stack:
                continue
            tries += 1
            if tries > 64:
                break
            head = "\n".join(self.lines[i : k + 1]).rstrip().rstrip(",")
            if head.endswith(":"):
                continue
            closers = "".join("]" if ch == "[" else "}" for ch in reversed(stack))
            try:
                return json.loads(head + closers), k + 1 - i
            except ValueError:
                continue
        return None, 0

    def json_captures(self, threads: list[dict], partial: bool):
        self.close()
        cap = None
        for obj in threads:
            pid = _int_in(obj.get("pid"), 32)
            info = obj.get("process_info") if isinstance(obj.get("process_info"), dict) else {}
            if pid is None:
                pid = _int_in(info.get("pid"), 32)
            if cap is None or pid != cap.pid:
                cap = self.open()
                cap.is_json, cap.has_process, cap.pid = True, True, pid
                if isinstance(info.get("command_line"), str):
                    cap.cmd = [info["command_line"]]
                parent = info.get("parent")
                if isinstance(parent, dict):
                    cap.parent_pid = _int_in(parent.get("pid"), 32)
                    if isinstance(parent.get("command_line"), str):
                        cap.parent_cmd = [parent["command_line"]]
            tid = obj.get("os_thread_id")
            tid = _thread_id(tid if tid is not None else obj.get("thread_id"))
            name = obj.get("thread_name") if isinstance(obj.get("thread_name"), str) else None
            active, gil = bool(obj.get("active")), bool(obj.get("owns_gil"))
            thread = _Thread(tid, name, "active+gil" if active and gil else "active" if active else "idle")
            frames = obj.get("frames") if isinstance(obj.get("frames"), list) else []
            for frame in frames:
                if isinstance(frame, dict) and "name" in frame:
                    thread.frames.append(_json_frame(frame))
            cap.threads.append(thread)
        if partial and cap is not None:
            cap.threads[-1].partial = True  # the JSON was cut: after (or inside) its last thread
        self.close()


def _is_json_thread(obj) -> bool:
    return isinstance(obj, dict) and any(k in obj for k in ("frames", "thread_id", "os_thread_id"))


def _json_frame(frame: dict) -> list:
    function = frame.get("name") if isinstance(frame.get("name"), str) else "?"
    file = frame.get("short_filename") or frame.get("filename")
    file = file if isinstance(file, str) else None
    line = _int_in(frame.get("line"), 32) or None
    if "module" in frame:
        native = frame.get("module") is not None
    else:
        native = _is_native(function, file, line)
    locals_lines = None
    if isinstance(frame.get("locals"), list) and frame["locals"]:
        locals_lines, shown = [], set()
        for local in frame["locals"]:
            if not isinstance(local, dict):
                continue
            section = "Arguments:" if local.get("arg") else "Locals:"
            if section not in shown:
                locals_lines.append(section)
                shown.add(section)
            repr_ = local.get("repr")
            locals_lines.append(f"{local.get('name')}: {repr_ if isinstance(repr_, str) else '?'}")
    return [function, file, line, native, locals_lines]


# --- rows ------------------------------------------------------------------------------------------


def _capture_id(source: str, source_pos: str, pid, index: int) -> str:
    key = f"{source}\x1f{source_pos}\x1f{pid}\x1f{index}"
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def parse_dump(
    text: str,
    *,
    source: str = "",
    source_pos: str = "",
    capture_ts=None,
    host: str | None = None,
    pid_hint: int | None = None,
    ranks_hint: dict | None = None,
    role_hint: str | None = None,
) -> DumpResult:
    """Parse py-spy dump text (py-spy 0.1–0.4 text or ``--json``, however pasted) into rows.

    Args:
        text: the dump(s), any surrounding text (see the module doc for what is recognised).
        source, source_pos: provenance copied to every row (path; line number, byte offset or
            journal cursor of the record that carried the text) and hashed into ``capture_id``.
        capture_ts: when the dump was taken (``datetime``, naive = UTC, or ISO 8601 string). When
            the text has SGLang markers with times, the first dated marker is pinned to it and later
            ones keep their printed offsets. Without it, a marker's printed time is read as UTC.
        host: copied to every row.
        pid_hint: pid of a capture whose ``Process`` line and marker are missing (a fragment), such
            as the pid of the log record that carried it; else such a capture's pid is null.
        ranks_hint: ``{"dp_rank"|"pp_rank"|"tp_rank"|"ep_rank": int}`` used when neither the
            process title (``sglang::scheduler_DP1_TP1_EP1_PP0``) nor the marker's rank prefix
            (``[ts PP2 TP1] Pyspy dump …``) gives ranks.
        role_hint: ``prefill``/``decode``/… used when no command line shows ``--disaggregation-mode``.

    Returns:
        A ``DumpResult``: ``frames`` (schema ``STACKS``; ``capture_ts`` Datetime µs UTC, ``depth``
        0 = innermost), ``captures`` (schema ``CAPTURES``), ``unparsed_lines``, ``other_lines``,
        ``line_kinds``, ``format``. ``capture_id`` is a 16-hex hash of source, source_pos, pid and
        the capture's index in ``text``, so re-runs give identical ids.

    Raises:
        PyspyError: ``capture_ts`` of the wrong type or unreadable; ``ranks_hint`` with unknown keys.
        Never raises because of ``text``.

    Example:
        >>> r = parse_dump("Process 7: sglang::scheduler_TP1\\nPython v3.12.3 (/usr/bin/python3)\\n\\n"
        ...                'Thread 7 (idle): "MainThread"\\n    all_reduce (pynccl.py:10)\\n')
        >>> r.captures.select("tp_rank", "wait_class", "backend").row(0)
        (1, 'all_reduce', 'nccl')
    """
    base_ts = _as_utc(capture_ts)
    hint = dict(ranks_hint or {})
    unknown = sorted(set(hint) - set(RANK_COLUMNS))
    if unknown:
        raise PyspyError(f"ranks_hint keys {unknown} are not ranks; use {list(RANK_COLUMNS)}")
    reader = _Reader(text if isinstance(text, str) else "" if text is None else str(text)).run()
    kinds = [k or "unparsed" for k in reader.kinds]
    first_marker = next((c.marker_ts for c in reader.captures if c.marker_ts is not None), None)

    frame_rows: list[tuple] = []
    capture_rows: list[tuple] = []
    index = 0
    for cap in reader.captures:
        if not cap.threads:
            continue
        pid, process_name, role, rank_values = _who(cap, pid_hint, hint, role_hint)
        if base_ts is not None:
            ts = base_ts + (cap.marker_ts - first_marker) if cap.marker_ts and first_marker else base_ts
        else:
            ts = cap.marker_ts.replace(tzinfo=UTC) if cap.marker_ts else None
        head = (_capture_id(source, source_pos, pid, index), ts, host, pid, process_name, role, *rank_values)
        for thread in cap.threads:
            capture_row, rows = _thread_rows(thread, head, index, cap.python_version, (source, source_pos))
            capture_rows.append(capture_row)
            frame_rows.extend(rows)
        index += 1

    formats = {"json" if c.is_json else "text" for c in reader.captures if c.threads}
    return DumpResult(
        frames=pl.DataFrame(frame_rows, schema=STACKS, orient="row"),
        captures=pl.DataFrame(capture_rows, schema=CAPTURES, orient="row"),
        unparsed_lines=[reader.raw[i] for i, k in enumerate(kinds) if k == "unparsed"],
        other_lines=[reader.raw[i] for i, k in enumerate(kinds) if k == "other"],
        line_kinds=kinds,
        format="+".join(sorted(formats, key=("text", "json").index)) or "none",
    )


def _who(cap: _Capture, pid_hint, hint: dict, role_hint: str | None) -> tuple:
    """A capture's pid (its ``Process`` line, else its marker's, else ``pid_hint`` unless the text
    names another process), process name, role and rank values (in ``RANK_COLUMNS`` order): from the
    process title, else the marker's rank prefix, else ``hint``."""
    process_name = "\n".join(cap.cmd).strip() or None
    pid = cap.pid if cap.pid is not None else cap.marker_pid
    if pid is None:
        pid = None if cap.another_process else _int_in(pid_hint, 32)
    title = _TITLE.search(process_name or "")
    ranks = _ranks_from_tokens(title.group(0).split("::", 1)[1]) if title else {}
    ranks = ranks or cap.marker_ranks or hint
    role_match = _ROLE.search(process_name or "") or _ROLE.search("\n".join(cap.parent_cmd))
    role = role_match.group(1) if role_match else role_hint
    return pid, process_name, role, tuple(ranks.get(c) for c in RANK_COLUMNS)


def _thread_rows(thread: _Thread, head: tuple, index: int, python_version, where: tuple) -> tuple:
    """One thread of a capture: its ``CAPTURES`` row and its ``STACKS`` rows (one per frame, or one
    without a frame). ``head`` is (capture_id, ts, host, pid, process_name, role, *ranks); ``where``
    (source, source_pos)."""
    c = classify_stack(thread.frames, thread.state)
    partial = not thread.whole()
    pid = head[3]
    is_main = (thread.tid is not None and thread.tid == pid) or thread.name == "MainThread"
    capture_row = (
        head[0],
        index,
        *head[1:6],
        python_version,
        *head[6:],
        thread.tid,
        thread.name,
        thread.state,
        is_main,
        len(thread.frames),
        c.wait_class,
        c.backend,
        c.event_loop,
        c.wait_frame,
        c.innermost,
        c.fingerprint,
        partial,
        *where,
    )
    who = (*head, thread.tid, thread.name, thread.state)
    if not thread.frames:
        return capture_row, [(*who, 0, None, None, None, None, None, partial, *where)]
    rows = [
        (
            *who,
            depth,
            function,
            file,
            line,
            native,
            "\n".join(locals_lines) if locals_lines else None,
            partial,
            *where,
        )
        for depth, (function, file, line, native, locals_lines) in enumerate(thread.frames)
    ]
    return capture_row, rows
