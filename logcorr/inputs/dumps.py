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

A pickle is a program. ``walk`` runs none of the file's, and interprets its opcodes itself
(``pickletools.genops`` reads them; only the opcodes of plain data, globals and calls of the allowed
types are run, any other refuses the file): a global under ``sglang.`` becomes a
plain record class of that name (nothing of SGLang is imported), a few plain types are allowed
(``set``, ``frozenset``, ``OrderedDict``, ``datetime`` …), and every other global refuses the file.
Nor does a small file expand without bound: no allowed callable allocates from a number
(``bytearray(n)`` is refused), what they copy is counted against ``BUILD_PER_BYTE`` times the file's
size, a value is shown (``shown``) up to ``MAX_SHOWN_CHARS`` however often it is referenced, and the
records of one dump stop at ``TEXT_PER_BYTE`` times its size. Nor is the dump held whole (issue 47,
the trial's F6: 400,000 requests took 1 to 2.3 GB): a first walk finds which memo entries are fetched
again, the second gives each request as the pickle appends it to the ``requests`` list and keeps a memo
entry only up to its last fetch, so a request's objects are let go once it is made into records.

Each request becomes the records SGLang's ``--log-requests`` would have printed: ``Receive: obj=…`` at
its created time and, when it finished, ``Finish: obj=…, out={…}`` at its finish time, so the
``request_log`` table holds its rid, bootstrap room and finish; ``server_args=ServerArgs(…)`` and the
launch command (``cmdline``) give the ``config`` row; the dump itself is one record at its time.
"""

from __future__ import annotations

import collections
import contextlib
import datetime as dt
import mmap
import pickle
import pickletools
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pyarrow as pa

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
    budget: _Budget | None = None  # of the walk that made the stand-in class

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
    cls = getattr(cls, "builds", cls)  # an allowed type, counted (``_Walk.find_class``)
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


GETS = frozenset(("GET", "BINGET", "LONG_BINGET"))
LITERALS = (  # opcodes whose value is their argument (pickletools decodes it)
    "INT BININT BININT1 BININT2 LONG LONG1 LONG4 STRING BINSTRING SHORT_BINSTRING BINBYTES SHORT_BINBYTES "
    "BINBYTES8 BYTEARRAY8 UNICODE SHORT_BINUNICODE BINUNICODE BINUNICODE8 FLOAT BINFLOAT"
).split()
PUTS = frozenset(("PUT", "BINPUT", "LONG_BINPUT", "MEMOIZE"))
REFUSED_OPS = {  # opcodes no dump of SGLang's holds, each of which would reach outside the file
    "PERSID": "the pickle holds a persistent id: refused",
    "BINPERSID": "the pickle holds a persistent id: refused",
    "EXT1": "the pickle names an extension code (copyreg's registry): refused",
    "EXT2": "the pickle names an extension code (copyreg's registry): refused",
    "EXT4": "the pickle names an extension code (copyreg's registry): refused",
    "NEXT_BUFFER": "the pickle refers to out-of-band buffers: refused",
    "READONLY_BUFFER": "the pickle refers to out-of-band buffers: refused",
}


class _MemoIndex:
    """The index ``MEMOIZE`` gives, pickle's (the number of memo entries so far), counted without
    keeping the entries: indices put in sequence as a count, any others (``PUT n`` far ahead) as a set."""

    def __init__(self) -> None:
        self.dense, self.sparse = 0, set()

    def put(self, idx: int) -> None:
        if idx < 0:
            raise pickle.UnpicklingError("negative PUT argument")
        if idx == self.dense:
            self.dense += 1
            while self.dense in self.sparse:
                self.sparse.discard(self.dense)
                self.dense += 1
        elif idx > self.dense:
            self.sparse.add(idx)

    def next(self) -> int:
        return self.dense + len(self.sparse)


def _not_a_pickle(path: Path, e: Exception) -> DumpError:
    """The ``DumpError`` for what reading the pickle raised: cut short, a refusal, or broken."""
    said = str(e)
    if isinstance(e, ValueError) and any(
        words in said for words in ("exhausted", "but only", "not enough data", "no newline")
    ):
        said = "pickle data was truncated"  # pickletools' words for it, said as the unpickler says them
    if "truncated" in said:  # a pickle is one program: a cut one gives nothing back
        return DumpError(f"{path}: cut short ({said}): nothing of it can be read")
    if isinstance(e, pickle.UnpicklingError):
        return DumpError(f"{path}: {said}")
    return DumpError(f"{path}: not a whole pickle ({type(e).__name__}: {said})")


def _let_go(view: mmap.mmap, since: int = 0) -> int:
    """Drop the pages of the mapped file between ``since`` and the walk's position from this process's
    memory (they are the file's, read again if ever needed); returns the new ``since``."""
    end = view.tell() // mmap.PAGESIZE * mmap.PAGESIZE
    if end > since:
        view.madvise(mmap.MADV_DONTNEED, since, end - since)
    return max(end, since)


def _last_uses(view) -> dict[int, int]:
    """The first walk over a pickle (``pickletools.genops``, nothing built): for each memo entry that
    is fetched (``GET``), the number of the last opcode fetching it. Raises ``ValueError`` (cut short,
    an unknown opcode) and ``pickle.UnpicklingError``."""
    last: dict[int, int] = {}
    index = _MemoIndex()
    since = 0
    for n, (op, arg, _) in enumerate(pickletools.genops(view)):
        name = op.name
        if name in GETS:
            last[arg] = n
        elif name in PUTS:
            index.put(index.next() if name == "MEMOIZE" else arg)
        if not n & 0xFFFFF:
            since = _let_go(view, since)
    _let_go(view, since)
    return last


class _Walk:
    """The second walk: a restricted interpreter of the pickle's opcodes (``pickletools.genops``),
    which runs no code of the file (see the module's docstring) and holds no more of it than it must.

    ``requests()`` gives each item appended to the dump's ``requests`` list (the list under that key
    of the top dict, filled by ``APPEND``/``APPENDS``) as it comes, instead of keeping it; a memo entry is
    kept only until the last opcode that fetches it (``last``, from ``_last_uses``). So a dump of
    400,000 requests holds a batch of them (SGLang's pickler appends 1,000 at a time) and the objects
    they share, not all of them. After the walk, ``data`` is what the pickle makes (its requests list
    empty when they were given out) and ``head`` the top dict's pairs set before ``requests`` (then its
    ``server_args``), or ``data``. ``items`` bounds what the allowed callables copy (``_Budget``).
    Raises ``pickle.UnpicklingError`` naming the first global or opcode it refuses, when ``items`` are
    spent, or for a broken program; other exceptions for hostile bytes (a wrong type for an opcode)."""

    def __init__(self, path: Path, view, last: dict[int, int], items: int = BUILD_FLOOR) -> None:
        self.path, self.view, self.last = path, view, last
        self.stack: list = []
        self.marks: list[int] = []
        self.memo: dict[int, object] = {}
        self.index = _MemoIndex()
        self.n = 0
        self.budget = _Budget(items)
        self.stand_ins: dict[tuple[str, str], type] = {}
        self.found: list | None = None  # the dump's requests list, once items were appended to it
        self.given: list = []  # its items not yet given out
        self.head: dict | None = None
        self.data = None
        push, top = self.stack.append, self._top
        self.ops = {
            **dict.fromkeys(LITERALS, push),
            "NONE": lambda _: push(None),
            "NEWTRUE": lambda _: push(True),
            "NEWFALSE": lambda _: push(False),
            "EMPTY_LIST": lambda _: push([]),
            "EMPTY_TUPLE": lambda _: push(()),
            "EMPTY_DICT": lambda _: push({}),
            "EMPTY_SET": lambda _: push(set()),
            "MARK": lambda _: self.marks.append(len(self.stack)),
            "POP_MARK": lambda _: self._pop_mark(),
            "POP": self._pop_op,
            "DUP": lambda _: push(top()),
            "LIST": lambda _: push(self._pop_mark()),
            "TUPLE": lambda _: push(tuple(self._pop_mark())),
            "TUPLE1": lambda _: push((self._pop(),)),
            "TUPLE2": lambda _: push(tuple(self._pops(2))),
            "TUPLE3": lambda _: push(tuple(self._pops(3))),
            "DICT": self._dict,
            "FROZENSET": lambda _: push(frozenset(self._pop_mark())),
            "APPEND": lambda _: self._extend([self._pop()]),
            "APPENDS": lambda _: self._extend(self._pop_mark()),
            "SETITEM": lambda _: self._setitems(self._pops(2)),
            "SETITEMS": lambda _: self._setitems(self._pop_mark()),
            "ADDITEMS": self._additems,
            "GET": self._get,
            "BINGET": self._get,
            "LONG_BINGET": self._get,
            "PUT": self._put,
            "BINPUT": self._put,
            "LONG_BINPUT": self._put,
            "MEMOIZE": lambda _: self._put(self.index.next()),
            "GLOBAL": lambda arg: push(self.find_class(*arg.split(" ", 1))),
            "STACK_GLOBAL": self._stack_global,
            "INST": lambda arg: self._instantiate(self.find_class(*arg.split(" ", 1)), self._pop_mark()),
            "OBJ": lambda _: self._instantiate(*self._split(self._pop_mark())),
            "REDUCE": self._reduce,
            "NEWOBJ": lambda _: self._newobj(*self._pops(2), {}),
            "NEWOBJ_EX": lambda _: self._newobj(*self._pops(3)),
            "BUILD": self._build,
            "PROTO": self._proto,
            "FRAME": lambda _: None,
            "STOP": self._stop,
        }

    def requests(self) -> Iterator:
        """Run the pickle, giving each request item as its ``APPEND``/``APPENDS`` comes (see the class).
        Raises ``DumpError`` for what the walk refuses or meets."""
        ops, given = self.ops, self.given
        since = 0
        try:
            for n, (op, arg, _) in enumerate(pickletools.genops(self.view)):
                self.n = n
                if op.name not in ops:
                    raise pickle.UnpicklingError(REFUSED_OPS[op.name])
                ops[op.name](arg)
                if given:
                    yield from given
                    given.clear()
                    since = _let_go(self.view, since)
        except Exception as e:  # noqa: BLE001 — hostile bytes raise what the walk meets
            raise _not_a_pickle(self.path, e) from None
        if self.head is None:
            self.head = self.data if isinstance(self.data, dict) else {}

    def _top(self):
        if len(self.stack) <= (self.marks[-1] if self.marks else 0):
            raise pickle.UnpicklingError("unpickling stack underflow")
        return self.stack[-1]

    def _pop(self):
        if len(self.stack) <= (self.marks[-1] if self.marks else 0):
            raise pickle.UnpicklingError("unpickling stack underflow")
        return self.stack.pop()

    def _pop_op(self, _) -> None:  # POP with nothing above a MARK pops the MARK, as pickle does
        if self.marks and len(self.stack) == self.marks[-1]:
            self.marks.pop()
        else:
            self._pop()

    def _pops(self, k: int) -> list:
        if len(self.stack) - k < (self.marks[-1] if self.marks else 0):
            raise pickle.UnpicklingError("unpickling stack underflow")
        values = self.stack[-k:]
        del self.stack[-k:]
        return values

    def _pop_mark(self) -> list:
        if not self.marks:
            raise pickle.UnpicklingError("could not find MARK")
        at = self.marks.pop()
        values = self.stack[at:]
        del self.stack[at:]
        return values

    @staticmethod
    def _split(values: list) -> tuple:
        if not values:
            raise pickle.UnpicklingError("unpickling stack underflow")
        return values[0], values[1:]

    def _get(self, idx: int) -> None:
        try:
            value = self.memo[idx]
        except KeyError:
            raise pickle.UnpicklingError(f"Memo value not found at index {idx}") from None
        if self.last.get(idx) == self.n:  # its last fetch: let it go
            del self.memo[idx]
        self.stack.append(value)

    def _put(self, idx: int) -> None:
        value = self._top()
        self.index.put(idx)
        if self.last.get(idx, -1) > self.n:  # kept only when fetched later
            self.memo[idx] = value

    def _dict(self, _) -> None:
        values = self._pop_mark()
        if len(values) % 2:
            raise pickle.UnpicklingError("odd number of items for DICT")
        self.stack.append(dict(zip(values[::2], values[1::2], strict=True)))

    def _setitems(self, values: list) -> None:
        if len(values) % 2:
            raise pickle.UnpicklingError("odd number of items for SETITEMS")
        target = self._top()
        for i in range(0, len(values), 2):
            target[values[i]] = values[i + 1]

    def _additems(self, _) -> None:
        values, target = self._pop_mark(), self._top()
        if isinstance(target, set):
            target.update(values)
        else:
            for v in values:
                target.add(v)

    def _extend(self, values: list) -> None:
        target = self._top()
        if self.found is None and self._is_requests(target):
            self.found = target
        if target is self.found:
            self.given += values
        elif isinstance(target, list):
            target.extend(values)
        elif hasattr(target, "extend"):
            target.extend(values)
        else:
            for v in values:
                target.append(v)

    def _is_requests(self, target) -> bool:
        """Is ``target`` the list under ``requests`` of the top dict (``EMPTY_DICT``, then its pairs by
        ``SETITEM`` or ``MARK … SETITEMS``)? Keeps the pairs before it in ``head``."""
        s = self.stack
        if not (
            isinstance(target, list) and len(s) >= 3 and isinstance(s[0], dict) and isinstance(s[-2], str)
        ):
            return False
        if s[-2] != "requests" or not (self.marks == [] and len(s) == 3 or self.marks == [1] and len(s) % 2):
            return False
        self.head = {**s[0], **dict(zip(s[1:-2:2], s[2:-2:2], strict=True))}
        return True

    def _stack_global(self, _) -> None:
        module, name = self._pops(2)
        if not (isinstance(module, str) and isinstance(name, str)):
            raise pickle.UnpicklingError("STACK_GLOBAL requires str")
        self.stack.append(self.find_class(module, name))

    def _instantiate(self, cls, args: list) -> None:
        self.stack.append(cls.__new__(cls) if isinstance(cls, type) and not args else cls(*args))

    def _reduce(self, _) -> None:
        func, args = self._pops(2)
        if not isinstance(args, tuple):
            raise pickle.UnpicklingError("REDUCE argument must be a tuple")
        self.stack.append(func(*args))

    def _newobj(self, cls, args, kwargs) -> None:
        if not isinstance(cls, type):
            raise pickle.UnpicklingError("NEWOBJ class argument isn't a type object")
        if not isinstance(args, tuple) or not isinstance(kwargs, dict):
            raise pickle.UnpicklingError("NEWOBJ arguments must be a tuple and a dict")
        self.stack.append(cls.__new__(cls, *args, **kwargs))

    def _build(self, _) -> None:
        state = self._pop()
        setstate = getattr(self._top(), "__setstate__", None)
        if setstate is None:  # only SGLang's stand-ins take a state; the plain types are made whole
            raise pickle.UnpicklingError(f"BUILD of a {type(self._top()).__name__}: refused")
        setstate(state)

    def _proto(self, proto: int) -> None:
        if not 0 <= proto <= pickle.HIGHEST_PROTOCOL:
            raise pickle.UnpicklingError(f"unsupported pickle protocol: {proto}")

    def _stop(self, _) -> None:
        self.data = self._pop()

    def find_class(self, module: str, name: str):
        """A plain ``Record`` class for an SGLang name, an allowed type counted against the budget;
        any other global raises ``pickle.UnpicklingError``."""
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


@contextlib.contextmanager
def walk(path: Path) -> Iterator[_Walk]:
    """The dump at ``path`` mapped and walked (``_last_uses``, then a ``_Walk`` ready to run, its
    ``requests()`` raising ``DumpError`` for what the walk refuses). Raises ``DumpError`` (larger than
    ``MAX_DUMP_BYTES``, empty, cut short, an unknown opcode) and ``OSError``. The file is mapped, not
    read: a length the pickle claims is never allocated before the bytes are there, and the pages
    walked are let go (``_let_go``)."""
    size = path.stat().st_size
    if size > MAX_DUMP_BYTES:
        raise DumpError(
            f"{path}: {size / 2**30:.1f} GiB, more than a dump of {MAX_DUMP_BYTES >> 30} GiB: not read"
        )
    if size == 0:
        raise DumpError(f"{path}: cut short (pickle data was truncated): nothing of it can be read")
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as view:
        try:
            last = _last_uses(view)
        except Exception as e:  # noqa: BLE001 — hostile bytes raise what the walk meets
            raise _not_a_pickle(path, e) from None
        view.seek(0)
        yield _Walk(path, view, last, max(BUILD_FLOOR, BUILD_PER_BYTE * size))


def load(path: Path) -> dict:
    """The dump's dict, SGLang's objects as ``Record``s, its requests a list (all of them in memory:
    ``read`` takes them one by one). Raises ``DumpError`` (a refused global, not a dump's dict, larger
    than ``MAX_DUMP_BYTES``, cut short) and ``OSError``."""
    with walk(path) as walker:
        given = list(walker.requests())
    data = walker.data
    if not isinstance(data, dict) or not isinstance(data.get("requests"), list | tuple):
        raise DumpError(f"{path}: a pickle, but not an SGLang dump (no 'requests' list)")
    return {**data, "requests": [*given, *data["requests"]]}


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


def read(path: Path, report, scratch: Path) -> Iterator[pl.DataFrame]:
    """Records (``journald.RECORD_COLUMNS``) of one dump, in chunks: a ``Receive:`` per request at its
    created time, a ``Finish:`` per finished one at its finish time, the ``server_args`` line and the
    launch command at the dump's time (its latest request time), and one record naming the dump with its
    finished and in-flight counts. ``host`` is the folder the crash dump sits in
    (``<crash folder>/<host>/``); ``report.notes`` says what was read. Records past ``TEXT_PER_BYTE``
    times the file's size (one request referenced a million times) are not made: said in
    ``report.errors``, the input ``incomplete``. Raises ``DumpError``.

    Each request is made into its records as the walk gives it (``walk``), then let go. The first record
    wants the dump's time, known only when the walk ends: the first chunk waits in memory until then,
    the later ones in a scratch file (Arrow IPC, zstd, unnamed, in ``scratch``)."""
    size = path.stat().st_size
    crash = CRASH_NAME.search(path.name)
    host = path.parent.name if crash else None
    unit = f"sglang {'crash' if crash else 'request'} dump"
    rows: list[dict] = []
    left = max(TEXT_FLOOR, TEXT_PER_BYTE * size)  # characters of records still to make

    def row(ts, message, pos, cmdline=None) -> dict:  # each record a stream of its own: nothing re-joined
        nonlocal left
        left -= len(message)
        return dict(ts=ts, host=host, unit=unit, message=message, source=report.source, source_pos=pos,
                    stream=f"{report.source}|{pos}", cmdline=cmdline)  # fmt: skip

    def chunk(part: list[dict]) -> pl.DataFrame:
        return conform(pl.DataFrame(part, infer_schema_length=None), journald.RECORD_COLUMNS, strict=False)

    def opening() -> Record | None:  # server_args among the pairs the dump sets before its requests
        args = walker.head.get("server_args")
        if isinstance(args, Record):
            rows.append(row(None, f"server_args={args!r}", "server_args"))  # time and command: at the end
            return args
        return None

    first: list[dict] | None = None  # the first chunk, held: its first record gets the dump's time
    writer = early = at = None
    total = running = done = 0
    cut = False
    with walk(path) as walker, tempfile.TemporaryFile(dir=scratch) as spill:
        for item in _items(walker, path):
            if not (isinstance(item, list | tuple) and len(item) >= 4):
                continue
            i, total = total, total + 1
            obj, out, created, finished, *_ = item
            if (t := _utc(finished)) is not None and (at is None or t > at):
                at = t
            if cut:  # past TEXT_PER_BYTE: counted, no more records made
                continue
            if i == 0:
                early = opening()
            if len(rows) >= CHUNK_ROWS:
                if first is None:
                    first = rows.copy()
                else:
                    frame = chunk(rows).to_arrow()
                    writer = writer or pa.ipc.new_stream(
                        spill, frame.schema, options=pa.ipc.IpcWriteOptions(compression="zstd")
                    )
                    writer.write_table(frame)
                rows.clear()
            rows.append(row(_utc(created), f"Receive: obj={_request_repr(obj)}", f"requests[{i}] created"))
            if in_flight(out):
                running += 1
            else:
                text = f"Finish: obj={_request_repr(obj, ('rid', 'bootstrap_room'))}, out={shown(out, records_as_dicts=True)}"
                rows.append(row(_utc(finished), text, f"requests[{i}] finished"))
            done += 1
            cut = left <= 0
        if total == 0:
            early = opening()
        args, command = walker.data.get("server_args"), walker.data.get("launch_command")
        command = command if isinstance(command, str) and command else None
        head = rows if first is None else first
        if early is not None:
            args = early
            head[0].update(ts=at, cmdline=command)
        elif isinstance(args, Record):  # set after the requests: made now, first all the same
            head.insert(0, row(at, f"server_args={args!r}", "server_args", command))
        elif command:
            head.insert(0, row(at, f"launch command: {command}", "launch_command", command))
        kind = "crash dump" if crash else "request dump"
        rows.append(
            row(
                at,
                f"{kind} {path.name}: {done - running} finished and {running} unfinished request(s)"
                + (" in flight at the crash" if crash and running else ""),
                "dump",
            )
        )
        _tell(report, path, args, unit, (done, total, running, cut), at, host)
        if first is not None:
            yield chunk(first)
            first = None
        if writer is not None:
            writer.close()
            spill.seek(0)
            for batch in pa.ipc.open_stream(spill):
                yield pl.from_arrow(batch)
        yield chunk(rows)


def _tell(report, path: Path, args, unit: str, counts: tuple[int, int, int, bool], at, host) -> None:
    """What ``read`` says of a dump in its ``SourceReport``: the cut past ``TEXT_PER_BYTE`` (an error, the
    input ``incomplete``), the unit's role from ``server_args``, the note with its counts, its bytes."""
    done, total, running, cut = counts
    size = path.stat().st_size
    if cut:
        report.errors.append(
            f"{path}: its first {done:,} of {total:,} requests make more than {TEXT_PER_BYTE} times its "
            f"{size:,} bytes of records (the same objects referenced again and again: a pickle bomb?): the "
            "rest is not read"
        )
        report.incomplete = True
    mode = args.fields.get("disaggregation_mode") if isinstance(args, Record) else None
    report.unit_roles = {unit: mode if mode in ("prefill", "decode") else "engine"}
    kind = "crash dump" if CRASH_NAME.search(path.name) else "request dump"
    report.notes.append(
        f"SGLang {kind}: {total:,} request(s), {running:,} in flight at its time"
        + (f" ({at:%Y-%m-%d %H:%M:%S} UTC)" if at else "")
        + (f"; host {host} from its folder" if host else "")
    )
    report.bytes += size


def _items(walker: _Walk, path: Path) -> Iterator:
    """The dump's request items: those the walk gives as they come, then any its ``requests`` still
    holds (a tuple, a list built whole). Raises ``DumpError`` when the pickle is no dump's dict."""
    yield from walker.requests()
    data = walker.data
    if not isinstance(data, dict) or not isinstance(data.get("requests"), list | tuple):
        raise DumpError(f"{path}: a pickle, but not an SGLang dump (no 'requests' list)")
    yield from data["requests"]
