"""py-spy dumps → ``stacks`` rows (one per frame) and ``captures`` rows (one per capture × thread).

A *capture* is one ``py-spy dump`` of one process. The parser reads dumps wherever users have them:
files of several dumps, ``--subprocesses`` output, pastes with shell prompts, markdown fences and
``**headings**``, ``docker compose logs`` / ``kubectl --prefix`` prefixes, ANSI colours, SGLang's
watchdog output (``Pyspy dump for PID N:`` inside a log record), fragments that start mid-thread or
end mid-frame, and ``py-spy dump --json``. It is the mirror image of py-spy's ``src/dump.rs``: one
small reader per element (process header, thread, frame, locals), over one pass of the lines. The
line formats (marker, process, python, parent, thread, frame, locals, separator, json), each with
the py-spy/SGLang version that prints it and a sample, are ``pyspy_rules.LINE_FORMATS``.

Every line of the input gets one kind of ``pyspy_rules.LINE_KINDS`` (``DumpResult.line_kinds``,
aligned with ``text.splitlines()``); ``other`` lines are kept in ``DumpResult.other_lines`` and
``unparsed`` ones in ``DumpResult.unparsed_lines``. Nothing is dropped.

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
- A capture without any thread yields no rows (its lines are still counted).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import NamedTuple

import polars as pl

from logcorr.store import schema

from . import roles
from .prefix import HEADER_START, RAY_PREFIX, SGLANG_HEADER
from .pyspy_rules import LEVELS, LINE_FORMATS, match_backend, match_entry, match_event_loop, match_wait
from .pyspy_rules import LINE_KINDS as LINE_KINDS

STACKS = schema.STACKS.schema
CAPTURES = schema.CAPTURES.schema

_RE = {f.name: re.compile(f.pattern) for f in LINE_FORMATS}
# A record holding a faulthandler dump (a fatal Python error's threads): parse it for stacks too.
FAULTHANDLER = "(?m)^" + next(f.pattern for f in LINE_FORMATS if f.name == "fh_thread")
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
    """What ``parse_dump`` found: ``frames`` (schema ``STACKS``), ``captures`` (schema ``CAPTURES``),
    the raw ``unparsed_lines`` and ``other_lines`` and the ``line_kinds`` (see the module doc), and
    ``format``: ``text``, ``json``, ``text+json`` or ``none``."""

    frames: pl.DataFrame
    captures: pl.DataFrame
    unparsed_lines: list[str]
    other_lines: list[str]
    line_kinds: list[str]
    format: str


class Classification(NamedTuple):
    """The wait of one thread (see ``parsers/pyspy_rules.py`` for the rules), in ``CAPTURES`` order."""

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
    return _int_in(number, 64)


def _is_native(function: str, file: str | None, line: int | None) -> bool | None:
    if function.startswith("0x"):
        return True
    if file is None:
        return True if "::" in function else None
    if file.endswith((".py", ".pyw", ".pyx", ".pyi")) or (file.startswith("<") and file.endswith(">")):
        return False
    return line is None or bool(_C_SOURCE.search(file))


def _frame_text(function: str | None, file: str | None, line: int | None) -> str | None:
    if function is None or file is None:
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


def _ranks_from_tokens(text: str) -> dict[str, int]:
    ranks: dict[str, int] = {}
    for token, number in _TITLE_RANK.findall(text):
        column, value = f"{token.lower()}_rank", _int_in(number, 16)
        if column in schema.RANK_COLUMNS and value is not None:
            ranks[column] = value
    return ranks


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _clean(line: str) -> str:
    return _LINE_PREFIXES.sub("", _ANSI.sub("", line), count=1).rstrip("\r")


def _hash16(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


# --- classification ------------------------------------------------------------------------------


def fingerprint(frames: Sequence[tuple]) -> str:
    """Stable 16-hex-digit hash of a stack's ``(function, file)`` sequence, innermost first.

    Line numbers are left out and hex addresses in function names become ``0x?``, so one code path
    in two processes (different ASLR bases) hashes alike. An empty stack hashes to ``e3b0c44298fc1c14``.
    """
    return _hash16(
        "\n".join(f"{_ADDRESS.sub('0x?', f[0] or '')}\x1f{f[1] or ''}" for f in frames if f[0] is not None)
    )


def classify_stack(frames: Sequence[tuple], state: str | None = None) -> Classification:
    """Classify one thread's stack.

    Args:
        frames: ``(function, file, line)`` tuples (extra items ignored), innermost first; a frame
            with a null function (a frameless thread's placeholder row) is skipped.
        state: the thread's state as py-spy printed it (``idle``, ``active``, ``active+gil``).

    Returns:
        A ``Classification``: ``wait_class`` (one of ``pyspy_rules.WAIT_CLASSES``; when no rule
        matches, ``idle`` if py-spy called the thread idle, else ``running``; null for an empty
        stack), ``backend`` (``nccl``/``gloo``/``hccl`` or null), ``event_loop`` (SGLang
        ``event_loop_*`` function or null), ``wait_frame`` and ``innermost`` as ``"func (file:line)"``,
        ``fingerprint``.
    """
    real = [f for f in frames if f[0] is not None]
    rules = [match_wait(f[0], f[1]) for f in real]
    backend = next((b for f in real if (b := match_backend(f[0], f[1]))), None)
    event_loop = next((f[0] for f in real if match_event_loop(f[0])), None)
    # the class: the innermost match of the strongest level; wait_frame: innermost frame of that class
    best = min((r for r in rules if r is not None), key=lambda r: LEVELS.index(r.level), default=None)
    wait_class = wait_frame = None
    if best is not None:
        wait_class = best.wait_class
        frame = next(f for f, r in zip(real, rules, strict=True) if r and r.wait_class == wait_class)
        wait_frame = _frame_text(*frame[:3])
    elif real:
        wait_class = "idle" if state == "idle" else "running"
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
        """Not cut, and the base is a thread or interpreter entry (or no frame: see the module doc)."""
        if self.partial or not self.frames:
            return not self.partial
        python = [f for f in self.frames if f[3] is not True]
        base = python[-1] if python else self.frames[-1]
        return match_entry(base[0], base[1], native=not python) is not None


class _Capture:
    def __init__(self):
        self.pid = self.marker_pid = self.python_version = None
        self.cmd: list[str] = []
        self.parent_cmd: list[str] = []
        self.marker_ts: datetime | None = None
        self.marker_ranks: dict[str, int] = {}
        self.threads: list[_Thread] = []
        self.has_process = self.has_python = self.is_json = False
        self.another_process = False  # opened by a second MainThread: pid_hint is not its pid


class _Elements:
    """One reader per element of a dump (marker, process header, thread, frame, cut), as py-spy's
    ``dump.rs`` writes one; mixed into ``_Reader``, whose state (``cap``, ``thread``, ``lines``,
    ``kinds``) they update. Each returns the kind of the line it read."""

    def marker(self, line: str, m: re.Match) -> str:
        cap = self.open()
        cap.marker_pid = _int_in(m["pid"], 32)
        if h := _SGLANG_HEADER.match(_RAY_PREFIX.sub("", line, count=1)):
            with contextlib.suppress(ValueError):  # HH:MM:SS with "." or "," and any fraction: naive, µs
                cap.marker_ts = datetime.fromisoformat(f"{h['date']} {h['time']}")
            cap.marker_ranks = _ranks_from_tokens(h["ranks"])
        return "marker"

    def header_capture(self, process: bool) -> _Capture:
        """The capture a ``Process`` (``process``) or ``Python`` line belongs to: the open one unless
        it already has that line (or a later one), a thread or JSON; else a new one."""
        cap = self.cap
        if cap is None or (process and cap.has_process) or cap.has_python or cap.threads or cap.is_json:
            cap = self.open()
        self.thread, self.in_locals = None, False
        return cap

    def process(self, i: int, m: re.Match) -> str:
        cap = self.header_capture(process=True)
        cap.has_process = True
        cap.pid = _int_in(m["pid"], 32)
        cap.cmd = [m["cmd"] or ""]
        for j in range(i + 1, self.find_python(i) or i + 1):
            self.kinds[j] = "cmdline"
            cap.cmd.append(self.lines[j])
        return "process"

    def find_python(self, i: int) -> int | None:
        """A command line with newlines runs on until the ``Python v`` line (looked for in the next
        ``_LOOKAHEAD`` lines, never past another dump header)."""
        for j, line in enumerate(self.lines[i + 1 : i + 1 + _LOOKAHEAD], i + 1):
            if _RE["python"].match(line):
                return j
            if _RE["thread"].match(line) or _RE["process"].match(line) or "Pyspy dump for PID" in line:
                return None
        return None

    def python(self, m: re.Match) -> str:
        cap = self.header_capture(process=False)
        cap.has_python = True
        cap.python_version = m["version"]
        return "python"

    def parent(self, i: int, m: re.Match) -> str:
        cap = self.ensure_capture()
        cap.parent_cmd = [m["cmd"] or ""]
        for j, line in enumerate(self.lines[i + 1 : i + 1 + _LOOKAHEAD], i + 1):
            if not line.strip() or any(_RE[n].match(line) for n in ("thread", "process", "python", "frame")):
                break
            self.kinds[j] = "cmdline"
            cap.parent_cmd.append(line)
        return "parent"

    def thread_header(self, m: re.Match) -> str:
        state = {"gil": "active+gil"}.get(m["state"], m["state"])
        return self.add_thread(_Thread(_thread_id(m["tid"]), m["name"], state))

    def add_thread(self, thread: _Thread) -> str:
        cap = self.ensure_capture()
        if self.last_kind == "thread" and not self.thread.frames:
            self.thread.shares_next = thread  # maybe the grouped form: see share_grouped
        # only a MainThread looks for another one: a scan per thread would cost time quadratic in threads
        if thread.name == "MainThread" and any(
            t.name == "MainThread" and t.tid != thread.tid for t in cap.threads
        ):
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
            setattr(self.thread, "elided" if self.thread.frames else "partial", True)
        self.in_locals = False
        return "elision"

    def frame(self, m: re.Match) -> str:
        if self.thread is None:  # frames before any Thread line: a paste that starts mid-thread
            cap = self.ensure_capture()
            self.thread = _Thread(None, None, None, partial=True)
            cap.threads.append(self.thread)
        if not self.thread.frames:
            self.frame_indent = len(m["indent"])
        return self.add_frame(m["function"], m["file"], _int_in(m["line"], 32), self.thread.elided)

    def fh_frame(self, m: re.Match) -> str:
        """A faulthandler frame (``File "f", line N in func``): innermost first, as py-spy's."""
        if self.thread is None:  # a paste that starts mid-thread (batch24/02: sglang#6083's dump)
            cap = self.ensure_capture()  # first: opening a capture closes the thread (``close``)
            self.thread = _Thread(None, None, None, partial=True)
            cap.threads.append(self.thread)
        return self.add_frame(m["function"], m["file"], _int_in(m["line"], 32), self.thread.elided)

    def cut_frame(self, line: str) -> str:
        """The last line of a block, cut short: a frame as far as it can be read."""
        if m := _RE["frame_cut"].match(line):
            return self.add_frame(m["function"], m["file"] or None, _int_in(m["line"], 32), True)
        return self.add_frame(line.strip(), None, None, True)

    def add_frame(self, function: str, file: str | None, line: int | None, partial: bool) -> str:
        self.thread.frames.append([function, file, line, _is_native(function, file, line), None])
        self.thread.partial = self.thread.partial or partial
        self.in_locals = False
        return "frame"


class _Json:
    """``py-spy dump --json`` lists inside a text (whole or cut); mixed into ``_Reader``."""

    def json_block(self, i: int) -> bool:
        """Read a ``py-spy dump --json`` list starting at line ``i``; False when it is not one. Its keys
        are optional (``pid``/``thread_name``/``process_info`` 0.3+, ``is_entry`` 0.3.x+,
        ``is_shim_entry`` 0.4.1+)."""
        first = self.lines[i].strip()
        if first == "[":
            nxt = next((ln.strip() for ln in self.lines[i + 1 : i + 3] if ln.strip()), "")
            if not nxt.startswith(("{", "]")):
                return False
        elif not first.replace(" ", "").startswith(("[{", "[]")):
            return False
        end, snapshots, complete = self.scan_json(i)
        value = None  # the text starts with "[": a list when it parses
        if complete:  # (a value nested deeper than Python's recursion limit is no dump: RecursionError)
            with contextlib.suppress(ValueError, RecursionError):
                value, used = json.loads("\n".join(self.lines[i:end])), end - i
        if value is None:
            value, used = self.repair_json(i, end, snapshots)
        threads = [t for t in value if _is_json_thread(t)] if value is not None else []
        if value is None or (value and not threads):
            self.kinds[i:end] = ["unparsed"] * (end - i)
            self.close()
            return True
        self.kinds[i:end] = ["json"] * used + ["unparsed"] * (end - i - used)
        self.json_captures(threads, partial=not complete or used < end - i)
        return True

    def scan_json(self, i: int):
        """Follow brackets (outside strings) from line ``i``; stop where they balance, at a line that
        cannot continue pretty-printed JSON, or at the end. Returns ``(end, snapshots, complete)``:
        ``snapshots[k]`` is the open-bracket stack after line ``i + k`` (None inside a string)."""
        stack: list[str] = []
        in_str = escape = False
        snapshots: list[str | None] = []
        for j in range(i, len(self.lines)):
            line = self.lines[j]
            stripped = line.strip()
            if j > i and not in_str and stripped and stripped[0] not in _JSON_FIRST:
                return j, snapshots, False
            for ch in line:
                if in_str:  # a quote ends the string unless escaped; a backslash escapes the next char
                    in_str = escape or ch != '"'
                    escape = not escape and ch == "\\"
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
            if not stack and not in_str:
                return j + 1, snapshots, True
        return len(self.lines), snapshots, False

    def repair_json(self, i: int, end: int, snapshots: list) -> tuple:
        """Parse the longest prefix of a cut JSON dump that closes cleanly (at most 64 tries)."""
        for k in [k for k in range(end - 1, i - 1, -1) if snapshots[k - i]][:64]:
            head = "\n".join(self.lines[i : k + 1]).rstrip().rstrip(",")
            if head.endswith(":"):
                continue
            closers = "".join("]" if ch == "[" else "}" for ch in reversed(snapshots[k - i]))
            with contextlib.suppress(ValueError, RecursionError):
                return json.loads(head + closers), k + 1 - i
        return None, 0

    def json_captures(self, threads: list[dict], partial: bool):
        self.close()
        cap = None
        for obj in threads:
            info = obj.get("process_info") if isinstance(obj.get("process_info"), dict) else {}
            pid = _int_in(obj.get("pid"), 32)
            pid = pid if pid is not None else _int_in(info.get("pid"), 32)
            if cap is None or pid != cap.pid:
                cap = self.open()
                cap.is_json, cap.has_process, cap.pid = True, True, pid
                if isinstance(info.get("command_line"), str):
                    cap.cmd = [info["command_line"]]
                parent = info.get("parent")
                if isinstance(parent, dict) and isinstance(parent.get("command_line"), str):
                    cap.parent_cmd = [parent["command_line"]]
            tid = obj.get("os_thread_id")
            tid = _thread_id(tid if tid is not None else obj.get("thread_id"))
            name = obj.get("thread_name") if isinstance(obj.get("thread_name"), str) else None
            active, gil = bool(obj.get("active")), bool(obj.get("owns_gil"))
            thread = _Thread(tid, name, "active+gil" if active and gil else "active" if active else "idle")
            frames = obj.get("frames") if isinstance(obj.get("frames"), list) else []
            thread.frames = [_json_frame(f) for f in frames if isinstance(f, dict) and "name" in f]
            cap.threads.append(thread)
        if partial and cap is not None:
            cap.threads[-1].partial = True  # the JSON was cut: after (or inside) its last thread
        self.close()


class _Reader(_Elements, _Json):
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
        return self.cap or self.open()  # no capture open: a dump that starts after its header, pid unknown

    def run(self):
        for i, line in enumerate(self.lines):
            if self.kinds[i] is not None:  # read with an earlier line (command line, JSON)
                continue
            if not line.strip():
                self.kinds[i], self.after_break = "blank", True
                continue
            self.kinds[i] = self.last_kind = self.classify_line(i, line)
            self.after_break = self.last_kind == "decoration"
        self.share_grouped()
        return self

    def share_grouped(self):
        """The grouped form (see the module doc): a run of headers without frames takes the stack
        after it, each header that names the same thread."""
        threads = [t for cap in self.captures for t in cap.threads]
        for thread in reversed(threads):  # the stack travels back along a run of headers
            nxt = thread.shares_next
            if nxt is None or thread.frames or not nxt.frames or thread.tid == nxt.tid:
                continue
            if thread.name is None or thread.name != nxt.name:
                continue
            thread.frames = [list(frame) for frame in nxt.frames]
            thread.partial, thread.elided = nxt.partial, nxt.elided

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
        if m := _RE["fh_thread"].match(line):  # faulthandler: a hex thread id, no name, no state
            # "Current thread" is the one that raised the fatal error: where the process crashed; a lone
            # "Stack" is that thread too (faulthandler dumped it alone)
            current = m["stack"] is not None or m["current"].startswith("Current")
            return self.add_thread(_Thread(_thread_id(m["tid"]), None, "current" if current else None))
        if m := _RE["fh_frame"].match(line):
            return self.fh_frame(m)
        if self.cap is not None and _RE["elision"].match(line):
            return self.elision()
        deeper = _indent(line) > self.frame_indent
        if self.thread is not None and self.thread.frames and deeper and _RE["locals_header"].match(line):
            self.in_locals = True
            frame = self.thread.frames[-1]
            frame[4] = (frame[4] or []) + [line.strip().rstrip(":") + ":"]
            return "locals"
        if self.in_locals and deeper and (m := _RE["local"].match(line)):
            self.thread.frames[-1][4].append(f"{m['name']}: {m['repr']}")
            return "locals"
        if (m := _RE["frame"].match(line)) and self.frame_allowed(m, i):
            return self.frame(m)
        # a native C++ frame whose library the paste left out, between frames of a thread (batch22/08's
        # `at::native::nonzero_cuda_out_impl<bool>` under cudaStreamSynchronize): a native frame, no file
        if self.thread is not None and self.thread.frames and not self.after_break:
            if m := _RE["native_bare"].match(line):
                return self.add_frame(m["function"], None, None, self.thread.elided)
        if any(_RE[name].match(line) for name in _DECORATIONS):
            if _RE["separator"].match(line):  # between the processes of --subprocesses output
                self.close()
            return "decoration"
        if self.thread is not None and _indent(line) > 0 and self.is_last_of_block(i):
            return self.cut_frame(line)
        if self.cap is not None and not self.after_break:
            return "unparsed"
        self.close()
        return "other"

    def frame_allowed(self, m: re.Match, i: int) -> bool:
        """Inside a thread any frame-shaped line is a frame (unindented ones only right after
        another dump line); outside, only an indented one whose file part has no spaces starts a
        thread (so C++ ``frame #0: … (0x… in lib.so)`` lines and prose stay out), or an unindented one
        followed by another (``_UNINDENTED_FRAME``, both): a stack pasted without its header and indent."""
        if self.thread is not None:
            return bool(m["indent"]) or not self.after_break
        if any(ch.isspace() for ch in m["file"]):
            return False
        if m["indent"]:
            return True
        nxt = self.lines[i + 1] if i + 1 < len(self.lines) else ""
        return bool(_UNINDENTED_FRAME.match(self.lines[i]) and _UNINDENTED_FRAME.match(nxt))

    def is_last_of_block(self, i: int) -> bool:
        nxt = self.lines[i + 1] if i + 1 < len(self.lines) else ""
        return not nxt.strip() or _indent(nxt) == 0


# A frame line at column 0 that is surely one: ``function (file.py:N)`` or a native ``symbol (lib.so[.N…])``.
# Two in a row outside any thread open a thread without a header: the wedged ranks' stack pasted in a fence
# with its ``Thread`` line and indent left out (sglang#36702, batch22/08: ``cuStreamSynchronize
# (libcuda.so.595.71.05)`` / ``cudaStreamSynchronize (libcudart.so.13)`` / … / ``run_batch (scheduler.py:3594)``).
SURE_FRAME = r"\S[^()\n]* \([^()\s]*(?::\d+|\.so(?:\.[\d.]+)?)\)[ \t]*"
_UNINDENTED_FRAME = re.compile(SURE_FRAME + r"$")


def _is_json_thread(obj) -> bool:
    return isinstance(obj, dict) and any(k in obj for k in ("frames", "thread_id", "os_thread_id"))


def _json_frame(frame: dict) -> list:
    function = frame.get("name") if isinstance(frame.get("name"), str) else "?"
    file = frame.get("short_filename") or frame.get("filename")
    file = file if isinstance(file, str) else None
    line = _int_in(frame.get("line"), 32) or None
    native = frame["module"] is not None if "module" in frame else _is_native(function, file, line)
    locals_lines = []
    for local in frame["locals"] if isinstance(frame.get("locals"), list) else []:
        if not isinstance(local, dict):
            continue
        section = "Arguments:" if local.get("arg") else "Locals:"
        if section not in locals_lines:  # a local's line is never bare "Locals:" (it has ": ")
            locals_lines.append(section)
        repr_ = local.get("repr")
        locals_lines.append(f"{local.get('name')}: {repr_ if isinstance(repr_, str) else '?'}")
    return [function, file, line, native, locals_lines or None]


# --- rows ------------------------------------------------------------------------------------------


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
    unknown = sorted(set(hint) - set(schema.RANK_COLUMNS))
    if unknown:
        raise PyspyError(f"ranks_hint keys {unknown} are not ranks; use {list(schema.RANK_COLUMNS)}")
    reader = _Reader(text if isinstance(text, str) else "" if text is None else str(text)).run()
    first_marker = next((c.marker_ts for c in reader.captures if c.marker_ts is not None), None)

    frame_rows, capture_rows = [], []
    captures = [cap for cap in reader.captures if cap.threads]
    for index, cap in enumerate(captures):
        pid, process_name, role, ranks = _who(cap, pid_hint, hint, role_hint)
        role = role or roles.frame_role(f"{f[0]} {f[1]}" for t in cap.threads for f in t.frames or ())
        ts = cap.marker_ts.replace(tzinfo=UTC) if cap.marker_ts else None
        if base_ts is not None:
            ts = base_ts + (cap.marker_ts - first_marker) if cap.marker_ts else base_ts
        capture_id = _hash16(f"{source}\x1f{source_pos}\x1f{pid}\x1f{index}")
        head = (capture_id, ts, host, pid, process_name, role)
        for t in cap.threads:
            thread, tail = (t.tid, t.name, t.state), (not t.whole(), source, source_pos)
            is_main = (t.tid is not None and t.tid == pid) or t.name == "MainThread"
            c = classify_stack(t.frames, t.state)
            row = (capture_id, index, *head[1:], cap.python_version, *ranks, *thread, is_main, len(t.frames))
            capture_rows.append((*row, *c, *tail))
            frame_rows.extend(
                (*head, *ranks, *thread, depth, *f[:4], "\n".join(f[4]) if f[4] else None, *tail)
                for depth, f in enumerate(t.frames or [[None] * 5])  # a thread without frames: one row
            )

    formats = {"json" if c.is_json else "text" for c in captures}
    return DumpResult(
        frames=pl.DataFrame(frame_rows, schema=STACKS, orient="row"),
        captures=pl.DataFrame(capture_rows, schema=CAPTURES, orient="row"),
        unparsed_lines=[reader.raw[i] for i, k in enumerate(reader.kinds) if k == "unparsed"],
        other_lines=[reader.raw[i] for i, k in enumerate(reader.kinds) if k == "other"],
        line_kinds=reader.kinds,
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
    return pid, process_name, role, tuple(ranks.get(c) for c in schema.RANK_COLUMNS)
