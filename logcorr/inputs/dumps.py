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


class Record:
    """A plain stand-in for an SGLang object: its class name, the arguments it was built with, its
    state (the dataclass fields). Nothing of SGLang's class runs."""

    module = "sglang"

    def __new__(cls, *args, **kwargs):  # pickle's NEWOBJ builds it so, without __init__
        obj = super().__new__(cls)
        obj.args, obj.fields = args, dict(kwargs)
        return obj

    def __init__(self, *args, **kwargs) -> None:
        pass

    def __setstate__(self, state) -> None:
        if isinstance(state, tuple) and len(state) == 2:  # (__dict__, __slots__ values)
            for part in state:
                if isinstance(part, dict):
                    self.fields.update(part)
        elif isinstance(state, dict):
            self.fields.update(state)
        else:
            self.fields["state"] = state

    def __repr__(self) -> str:  # as a dataclass prints: Name(field=value, …); an enum member: its value
        if not self.fields and len(self.args) == 1:
            return repr(self.args[0])
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.fields.items())})"


def _reconstructor(cls, base, state):
    """``copyreg._reconstructor`` (protocols 0 and 1) for the allowed classes only."""
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
    bytearray,
    complex,
    collections.OrderedDict,
    collections.deque,
)
SAFE_GLOBALS = {
    **{("builtins", t.__name__): t for t in (set, frozenset, tuple, list, dict, bytearray, complex)},
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("collections", "deque"): collections.deque,
    **{("datetime", n): getattr(dt, n) for n in ("datetime", "date", "time", "timedelta", "timezone")},
    ("copyreg", "_reconstructor"): _reconstructor,
    ("_codecs", "encode"): _encode,
}


class DumpUnpickler(pickle.Unpickler):
    """``pickle.Unpickler`` that runs no code of the file: see the module's docstring. Raises
    ``pickle.UnpicklingError`` naming the first global it refuses."""

    def __init__(self, file) -> None:
        super().__init__(file)
        self.stand_ins: dict[tuple[str, str], type] = {}

    def find_class(self, module: str, name: str):
        if module == "sglang" or module.startswith("sglang."):
            key = (module, name)
            if key not in self.stand_ins:
                self.stand_ins[key] = type(name, (Record,), {"module": module})
            return self.stand_ins[key]
        if (module, name) in SAFE_GLOBALS:
            return SAFE_GLOBALS[(module, name)]
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
            data = DumpUnpickler(f).load()
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


def _plain(value, depth: int = 0):
    """``value`` with ``Record``s as dicts of their fields, for a ``repr`` a log line would show."""
    if depth > 20:
        return "…"
    if isinstance(value, Record):
        return {k: _plain(v, depth + 1) for k, v in value.fields.items()} or repr(value)
    if isinstance(value, dict):
        return {k: _plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v, depth + 1) for v in value]
    if isinstance(value, str) and len(value) > MAX_TEXT_CHARS:
        return value[:MAX_TEXT_CHARS]
    return value


def _request_repr(obj, fields: tuple[str, ...] = REQUEST_FIELDS) -> str:
    """``GenerateReqInput(rid='…', bootstrap_room=…)`` as SGLang's Receive line prints it (its fields)."""
    name = type(obj).__name__ if isinstance(obj, Record) else "GenerateReqInput"
    values = obj.fields if isinstance(obj, Record) else (obj if isinstance(obj, dict) else {})
    shown = ", ".join(f"{k}={values[k]!r}" for k in fields if k in values)
    return f"{name}({shown})"


def in_flight(out) -> bool:
    """Was the request still running at the dump: its last output has no ``finish_reason``."""
    meta = out.get("meta_info") if isinstance(out, dict) else None
    return not (isinstance(meta, dict) and meta.get("finish_reason"))


def read(path: Path, report) -> Iterator[pl.DataFrame]:
    """Records (``journald.RECORD_COLUMNS``) of one dump: a ``Receive:`` per request at its created
    time, a ``Finish:`` per finished one at its finish time, the ``server_args`` line and the launch
    command at the dump's time (its latest request time), and one record naming the dump with its
    finished and in-flight counts. ``host`` is the folder the crash dump sits in
    (``<crash folder>/<host>/``); ``report.notes`` says what was read. Raises ``DumpError``."""
    data = load(path)
    requests = [r for r in data["requests"] if isinstance(r, list | tuple) and len(r) >= 4]
    times = [t for r in requests if (t := _utc(r[3])) is not None]
    at = max(times) if times else None
    crash = CRASH_NAME.search(path.name)
    host = path.parent.name if crash else None
    args = data.get("server_args")
    mode = args.fields.get("disaggregation_mode") if isinstance(args, Record) else None
    unit = f"sglang {'crash' if crash else 'request'} dump"
    report.unit_roles = {unit: str(mode) if str(mode) in ("prefill", "decode") else "engine"}
    rows = []

    def record(ts, message, pos, cmdline=None):  # each record a stream of its own: nothing re-joined
        rows.append(dict(ts=ts, host=host, unit=unit, message=message, source=report.source, source_pos=pos,
                         stream=f"{report.source}|{pos}", cmdline=cmdline))  # fmt: skip

    if isinstance(args, Record):
        record(at, f"server_args={args!r}", "server_args", data.get("launch_command") or None)
    elif data.get("launch_command"):
        record(at, f"launch command: {data['launch_command']}", "launch_command", data["launch_command"])
    running = 0
    for i, (obj, out, created, finished, *_) in enumerate(requests):
        record(_utc(created), f"Receive: obj={_request_repr(obj)}", f"requests[{i}] created")
        if in_flight(out):
            running += 1
            continue
        shown = _request_repr(obj, ("rid", "bootstrap_room"))
        record(_utc(finished), f"Finish: obj={shown}, out={_plain(out)!r}", f"requests[{i}] finished")
    kind = "crash dump" if crash else "request dump"
    record(
        at,
        f"{kind} {path.name}: {len(requests) - running} finished and {running} unfinished request(s)"
        + (" in flight at the crash" if crash and running else ""),
        "dump",
    )
    report.notes.append(
        f"SGLang {kind}: {len(requests):,} request(s), {running:,} in flight at its time"
        + (f" ({at:%Y-%m-%d %H:%M:%S} UTC)" if at else "")
        + (f"; host {host} from its folder" if host else "")
    )
    report.bytes += path.stat().st_size
    if rows:
        yield conform(pl.DataFrame(rows, infer_schema_length=None), journald.RECORD_COLUMNS, strict=False)
