"""SGLang's crash dumps and request dumps (pickles) → records, read without running any of their code.

What SGLang writes (``python/sglang/srt/managers/tokenizer_manager.py``, 2025-2026):

- ``--crash-dump-folder D`` → ``D/<$HOSTNAME>/crash_dump_<%Y-%m-%d_%H-%M-%S>.pkl`` (local time in the
  name) when the server dies (SIGTERM while unhealthy, SIGQUIT from a child, an exception), logging
  ``Dumped {n} finished and {m} unfinished requests before crash to {file}``;
- ``--dump-requests-folder D`` (or ``/configure_logging``) → ``D/<%Y-%m-%d_%H-%M-%S>.pkl`` every
  ``--dump-requests-threshold`` finished requests.

Both are ``pickle.dump`` of ``{"server_args": ServerArgs | None, "requests": [(GenerateReqInput,
out_dict, created_time, finished_time), …], "launch_command": " ".join(sys.argv)}`` (the last key since
sglang#17967). Times are ``time.time()``: UTC epoch seconds. A crash dump lists the requests finished in
its last 5 minutes, then every request still in flight, whose last time is the dump's own and whose
``out_dict`` (its last streamed chunk, or ``{}``) has no ``finish_reason``.

A pickle is a program. ``DumpUnpickler`` runs none of the file's: a global under ``sglang.`` becomes a
plain record class of that name (nothing of SGLang is imported), a few plain types are allowed
(``set``, ``frozenset``, ``OrderedDict``, ``datetime`` …), and every other global refuses the file.
Nor does a small file expand without bound: no allowed callable allocates from a number
(``bytearray(n)`` is refused), what they copy is counted against ``BUILD_PER_BYTE`` times the file's
size, a value is shown (``shown``) up to ``MAX_SHOWN_CHARS`` however often it is referenced, and the
records of one dump stop at ``TEXT_PER_BYTE`` times its size.

Each request becomes the records SGLang's ``--log-requests`` would have printed: ``Receive: obj=…`` at
its created time and, when it finished, ``Finish: obj=…, out={…}`` at its finish time, so the
``request_log`` table holds its rid, bootstrap room and finish; ``server_args=ServerArgs(…)`` and the
launch command (``cmdline``) give the ``config`` row; the dump itself is one record at its time.
"""

from __future__ import annotations

import collections
import datetime as dt
import pickle
import re
from collections.abc import Iterator
from pathlib import Path

import polars as pl

from logcorr.parsers import journald
from logcorr.store.schema import conform

FORMAT = "sglang-dump"
MAX_DUMP_BYTES = 1 << 30  # a dump of the last 5 minutes' requests; larger is refused, not loaded
MAX_TEXT_CHARS = 65_536  # a returned text kept per request (markup leaks are found in it)
MAX_SHOWN_CHARS = 1 << 20  # a value shown in one record (server_args, a request's out): cut past it
# What a dump may build and show, per byte of the file (and at least the floor): a pickle's shared
# references let a few hundred bytes describe 10**9 strings (a "billion laughs"); a real dump's
# requests are each written out in it, so its records are a few times its size.
BUILD_PER_BYTE, BUILD_FLOOR = 16, 1 << 20  # items the allowed callables copy
TEXT_PER_BYTE, TEXT_FLOOR = 8, 16 << 20  # characters of the dump's records
CHUNK_ROWS = (
    16_384  # records of a dump's chunk: every stage holds a few while the dump's objects are held too
)
# Crash dumps are named after the local time they were written at
CRASH_NAME = re.compile(r"crash_dump_(\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d)\.pkl$")
# the request fields a Receive line shows (GenerateReqInput's, io_struct.py)
REQUEST_FIELDS = ("rid", "bootstrap_host", "bootstrap_port", "bootstrap_room", "stream")


class DumpError(Exception):
    """The file is not an SGLang dump logcorr reads: another pickle, a global it refuses, or cut short."""


def is_pickle(head: bytes) -> bool:
    """Does ``head`` start like a pickle of protocol 2 to 5 (``PROTO`` opcode)?"""
    return len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5


def sniff_pickle(head: bytes) -> str:
    """``sglang-dump`` for a pickle naming SGLang's classes in its first bytes, else ``pickle``."""
    return FORMAT if b"sglang." in head else "pickle"


class _Budget:
    """What the callables of one dump may still build (items copied); ``spend`` raises
    ``pickle.UnpicklingError`` past it."""

    def __init__(self, items: int) -> None:
        self.left = items

    def spend(self, items: int) -> None:
        self.left -= items
        if self.left < 0:
            raise pickle.UnpicklingError(
                "it builds far more than its size holds (shared references copied again and again: a "
                "pickle bomb, not a dump): refused"
            )


def _size(value) -> int:
    return (
        len(value)
        if isinstance(value, str | bytes | bytearray | list | tuple | dict | set | frozenset)
        else 1
    )


class Record:
    """A plain stand-in for an SGLang object: its class name, the arguments it was built with, its
    state (the dataclass fields). Nothing of SGLang's class runs."""

    __slots__ = ("args", "fields")  # no __dict__ per object: a dump holds hundreds of thousands
    module = "sglang"
    budget: _Budget | None = None  # of the unpickler that made the stand-in class

    def __new__(cls, *args, **kwargs):  # pickle's NEWOBJ builds it so, without __init__
        if cls.budget is not None:
            cls.budget.spend(1 + len(args) + len(kwargs))
        obj = super().__new__(cls)
        obj.args, obj.fields = args, dict(kwargs)
        return obj

    def __init__(self, *args, **kwargs) -> None:
        pass

    def __setstate__(self, state) -> None:
        if self.budget is not None:  # BUILD of one record many times copies its state each time
            self.budget.spend(sum(map(_size, state)) if isinstance(state, tuple) else _size(state))
        if isinstance(state, tuple) and len(state) == 2:  # (__dict__, __slots__ values)
            for part in state:
                if isinstance(part, dict):
                    self.fields.update(part)
        elif isinstance(state, dict):
            self.fields.update(state)
        else:
            self.fields["state"] = state

    def __repr__(self) -> str:  # as a dataclass prints: Name(field=value, …); an enum member: its value
        return shown(self)


class _Full(Exception):
    """``shown`` reached its limit."""


def shown(value, limit: int = MAX_SHOWN_CHARS, *, records_as_dicts: bool = False) -> str:
    """``repr(value)`` as a log line prints it, written piece by piece and cut with ``…`` at ``limit``
    characters, 20 levels deep, and where a value holds itself: shared references (a "billion laughs")
    or a cycle in a dump cost at most ``limit``. A ``Record`` prints as its dataclass would,
    ``Name(field=…)`` (an enum member: its value), or with ``records_as_dicts`` as ``{'field': …}`` and
    tuples as lists (a request's ``out`` as SGLang's Finish line shows it); a string or bytes longer than
    ``MAX_TEXT_CHARS`` is cut to it. Never raises."""
    parts: list[str] = []
    left = limit

    def put(text: str) -> None:
        nonlocal left
        parts.append(text[:left])
        left -= len(text)
        if left <= 0:
            raise _Full

    def each(opening: str, values, closing: str, depth: int, stack: frozenset) -> None:
        put(opening)
        for i, v in enumerate(values):
            if i:
                put(", ")
            walk(v, depth, stack)
        put(closing)

    def walk(v, depth: int, stack: frozenset) -> None:
        if isinstance(v, str | bytes | bytearray):
            put(repr(v[:MAX_TEXT_CHARS]))
            return
        if not isinstance(v, Record | dict | list | tuple | set | frozenset | collections.deque):
            try:
                put(repr(v))
            except ValueError:  # an int of more digits than Python prints
                put(f"<{type(v).__name__} too long to print>")
            return
        if depth > 20 or id(v) in stack:
            put("…")
            return
        depth, stack = depth + 1, stack | {id(v)}
        if isinstance(v, Record) and not v.fields and len(v.args) == 1:
            walk(v.args[0], depth, stack)
        elif isinstance(v, Record) and (not records_as_dicts or not v.fields):
            put(f"{type(v).__name__}(")
            for i, (k, x) in enumerate(v.fields.items()):
                put(f"{', ' if i else ''}{k}=")
                walk(x, depth, stack)
            put(")")
        elif isinstance(v, Record | dict):
            put("{")
            for i, (k, x) in enumerate((v.fields if isinstance(v, Record) else v).items()):
                if i:
                    put(", ")
                walk(k, depth, stack)
                put(": ")
                walk(x, depth, stack)
            put("}")
        elif isinstance(v, list) or (isinstance(v, tuple) and records_as_dicts):
            each("[", v, "]", depth, stack)
        elif isinstance(v, tuple):
            each("(", v, ",)" if len(v) == 1 else ")", depth, stack)
        elif isinstance(v, collections.deque):
            each("deque([", v, "])", depth, stack)
        elif not v:
            put(f"{type(v).__name__}()")
        else:
            each(
                "{" if isinstance(v, set) else "frozenset({",
                v,
                "}" if isinstance(v, set) else "})",
                depth,
                stack,
            )

    try:
        walk(value, 0, frozenset())
    except _Full:
        parts.append("…")
    return "".join(parts)


def _bytearray(source=b"", *args):
    """``bytearray`` of bytes or text the file holds; never of a number (``bytearray(n)`` allocates n)."""
    if not isinstance(source, bytes | bytearray | str):
        raise pickle.UnpicklingError(
            f"bytearray({type(source).__name__}): refused (it allocates from a number)"
        )
    return bytearray(source, *args)


def _reconstructor(cls, base, state):
    """``copyreg._reconstructor`` (protocols 0 and 1) for the allowed classes only."""
    cls = getattr(cls, "builds", cls)  # an allowed type, counted (``DumpUnpickler.find_class``)
    if isinstance(cls, type) and issubclass(cls, Record):
        return cls()
    if cls in SAFE_TYPES:
        return cls() if state is None else cls(state)
    raise pickle.UnpicklingError(f"copyreg._reconstructor of {cls!r}: refused")


def _encode(text: str, encoding: str = "latin1") -> bytes:
    """``_codecs.encode`` as protocol 2 uses it for bytes: text to bytes, nothing else."""
    return str(text).encode(encoding if encoding in ("latin1", "latin-1", "utf-8", "ascii") else "latin1")


SAFE_TYPES = (
    set,
    frozenset,
    tuple,
    list,
    dict,
    _bytearray,
    complex,
    collections.OrderedDict,
    collections.deque,
)
SAFE_GLOBALS = {
    **{("builtins", t.__name__): t for t in (set, frozenset, tuple, list, dict, complex)},
    ("builtins", "bytearray"): _bytearray,
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("collections", "deque"): collections.deque,
    **{("datetime", n): getattr(dt, n) for n in ("datetime", "date", "time", "timedelta", "timezone")},
    ("copyreg", "_reconstructor"): _reconstructor,
    ("_codecs", "encode"): _encode,
}


class DumpUnpickler(pickle.Unpickler):
    """``pickle.Unpickler`` that runs no code of the file: see the module's docstring. ``items``: what
    the allowed callables may copy in all (``BUILD_PER_BYTE`` times the file's size). Raises
    ``pickle.UnpicklingError`` naming the first global it refuses, or when ``items`` are spent."""

    def __init__(self, file, items: int = BUILD_FLOOR) -> None:
        super().__init__(file)
        self.stand_ins: dict[tuple[str, str], type] = {}
        self.budget = _Budget(items)

    def find_class(self, module: str, name: str):
        if module == "sglang" or module.startswith("sglang."):
            key = (module, name)
            if key not in self.stand_ins:
                self.stand_ins[key] = type(
                    name, (Record,), {"__slots__": (), "module": module, "budget": self.budget}
                )
            return self.stand_ins[key]
        if (module, name) in SAFE_GLOBALS:
            allowed = SAFE_GLOBALS[(module, name)]

            def counted(*args, **kwargs):  # what it copies is its arguments' size
                self.budget.spend(1 + sum(map(_size, args)) + sum(map(_size, kwargs.values())))
                return allowed(*args, **kwargs)

            counted.builds = allowed  # type: ignore[attr-defined]
            return counted
        raise pickle.UnpicklingError(
            f"the pickle asks for {module}.{name}: not an SGLang class or a plain type, so the file is not "
            "read (logcorr runs no code of a dump)"
        )

    def persistent_load(self, pid):
        raise pickle.UnpicklingError("the pickle holds a persistent id: refused")


def load(path: Path) -> dict:
    """The dump's dict, SGLang's objects as ``Record``s. Raises ``DumpError`` (a refused global, not a
    dump's dict, larger than ``MAX_DUMP_BYTES``, cut short) and ``OSError``."""
    size = path.stat().st_size
    if size > MAX_DUMP_BYTES:
        raise DumpError(
            f"{path}: {size / 2**30:.1f} GiB, more than a dump of {MAX_DUMP_BYTES >> 30} GiB: not read"
        )
    try:
        with open(path, "rb") as f:
            data = DumpUnpickler(f, max(BUILD_FLOOR, BUILD_PER_BYTE * size)).load()
    except pickle.UnpicklingError as e:
        if "truncated" in str(e):  # a pickle is one program: a cut one gives nothing back
            raise DumpError(f"{path}: cut short ({e}): nothing of it can be read") from None
        raise DumpError(f"{path}: {e}") from None
    except Exception as e:  # noqa: BLE001 — hostile bytes raise what the pickle machine meets
        raise DumpError(f"{path}: not a whole pickle ({type(e).__name__}: {e})") from None
    if not isinstance(data, dict) or not isinstance(data.get("requests"), list | tuple):
        raise DumpError(f"{path}: a pickle, but not an SGLang dump (no 'requests' list)")
    return data


def _utc(seconds) -> dt.datetime | None:
    try:
        return dt.datetime.fromtimestamp(float(seconds), dt.UTC)
    except (TypeError, ValueError, OverflowError, OSError):
        return None


def _request_repr(obj, fields: tuple[str, ...] = REQUEST_FIELDS) -> str:
    """``GenerateReqInput(rid='…', bootstrap_room=…)`` as SGLang's Receive line prints it (its fields)."""
    name = type(obj).__name__ if isinstance(obj, Record) else "GenerateReqInput"
    values = obj.fields if isinstance(obj, Record) else (obj if isinstance(obj, dict) else {})
    text = ", ".join(f"{k}={shown(values[k], MAX_TEXT_CHARS)}" for k in fields if k in values)
    return f"{name}({text})"


def in_flight(out) -> bool:
    """Was the request still running at the dump: its last output has no ``finish_reason``."""
    meta = out.get("meta_info") if isinstance(out, dict) else None
    return not (isinstance(meta, dict) and meta.get("finish_reason"))


def read(path: Path, report) -> Iterator[pl.DataFrame]:
    """Records (``journald.RECORD_COLUMNS``) of one dump, in chunks: a ``Receive:`` per request at its
    created time, a ``Finish:`` per finished one at its finish time, the ``server_args`` line and the
    launch command at the dump's time (its latest request time), and one record naming the dump with its
    finished and in-flight counts. ``host`` is the folder the crash dump sits in
    (``<crash folder>/<host>/``); ``report.notes`` says what was read. Records past ``TEXT_PER_BYTE``
    times the file's size (one request referenced a million times) are not made: said in
    ``report.errors``, the input ``incomplete``. Raises ``DumpError``."""
    data = load(path)
    size = path.stat().st_size
    requests = [r for r in data.pop("requests") if isinstance(r, list | tuple) and len(r) >= 4]
    total = len(requests)
    at = max((t for r in requests if (t := _utc(r[3])) is not None), default=None)
    crash = CRASH_NAME.search(path.name)
    host = path.parent.name if crash else None
    args = data.get("server_args")
    mode = args.fields.get("disaggregation_mode") if isinstance(args, Record) else None
    unit = f"sglang {'crash' if crash else 'request'} dump"
    report.unit_roles = {unit: mode if mode in ("prefill", "decode") else "engine"}
    command = data.get("launch_command")
    command = command if isinstance(command, str) and command else None
    rows: list[dict] = []
    left = max(TEXT_FLOOR, TEXT_PER_BYTE * size)  # characters of records still to make

    def record(ts, message, pos, cmdline=None) -> bool:  # each record a stream of its own: nothing re-joined
        nonlocal left
        left -= len(message)
        rows.append(dict(ts=ts, host=host, unit=unit, message=message, source=report.source, source_pos=pos,
                         stream=f"{report.source}|{pos}", cmdline=cmdline))  # fmt: skip
        return left > 0

    def chunk() -> pl.DataFrame:
        frame = conform(pl.DataFrame(rows, infer_schema_length=None), journald.RECORD_COLUMNS, strict=False)
        rows.clear()
        return frame

    if isinstance(args, Record):
        record(at, f"server_args={args!r}", "server_args", command)
    elif command:
        record(at, f"launch command: {command}", "launch_command", command)
    running = done = 0
    for i in range(total):
        (obj, out, created, finished, *_), requests[i] = requests[i], None  # each let go once read
        if len(rows) >= CHUNK_ROWS:
            yield chunk()
        more = record(_utc(created), f"Receive: obj={_request_repr(obj)}", f"requests[{i}] created")
        if in_flight(out):
            running += 1
        else:
            text = f"Finish: obj={_request_repr(obj, ('rid', 'bootstrap_room'))}, out={shown(out, records_as_dicts=True)}"
            more = record(_utc(finished), text, f"requests[{i}] finished")
        done += 1
        if not more:
            report.errors.append(
                f"{path}: its first {done:,} of {total:,} requests make more than {TEXT_PER_BYTE} times its "
                f"{size:,} bytes of records (the same objects referenced again and again: a pickle bomb?): the "
                "rest is not read"
            )
            report.incomplete = True
            break
    kind = "crash dump" if crash else "request dump"
    record(
        at,
        f"{kind} {path.name}: {done - running} finished and {running} unfinished request(s)"
        + (" in flight at the crash" if crash and running else ""),
        "dump",
    )
    report.notes.append(
        f"SGLang {kind}: {total:,} request(s), {running:,} in flight at its time"
        + (f" ({at:%Y-%m-%d %H:%M:%S} UTC)" if at else "")
        + (f"; host {host} from its folder" if host else "")
    )
    report.bytes += size
    yield chunk()
