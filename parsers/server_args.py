"""SGLang's start-up configuration: the ``server_args=ServerArgs(…)`` line and the launch command line.

Pure functions of text; no ``eval``, never raise on any input.

``server_args=ServerArgs(field=value, …)`` is what ``logger.info(f"{server_args=}")`` prints once per
start on the engine's main process (``server.py`` since 2024-07, ``entrypoints/engine.py`` since
2025-01): the dataclass ``repr`` of every field in declaration order, values as Python ``repr``
(strings quoted, ``None``, ``True``/``False``, numbers, lists, dicts, nested ``Name(k=v)`` reprs),
about 10 k characters in 2026 versions (193 fields in 2025-08, 444 in 2026-07). Values are the
*resolved* ones (``__post_init__`` ran before the line). Some logging setups prefix it with
``INFO engine.py:177:``; pastes cut it short.

The command line is what journald keeps in ``_CMDLINE`` (argv joined by spaces):
``python3 -m sglang.launch_server --tp 8 …`` or ``sglang serve …``. SGLang's flags are
``--`` + the field name with ``_`` → ``-`` plus a few aliases; argparse accepts any unambiguous prefix
(``--tp 8`` is ``--tp-size 8``; ``--pp`` is ambiguous), ``--flag=value`` and ``--flag value``, and
boolean fields are ``store_true`` flags.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field

from logcorr.parsers.server_args_fields import FIELD_KINDS

MARKER = "server_args=ServerArgs("

# Aliases SGLang declares beside ``--<field>`` (server_args.py / arg_groups, 2025-2026 versions).
ALIASES = {
    "tensor-parallel-size": "tp_size",
    "data-parallel-size": "dp_size",
    "pipeline-parallel-size": "pp_size",
    "expert-parallel-size": "ep_size",
    "ep": "ep_size",
    "nccl-init-addr": "dist_init_addr",
    "model": "model_path",
}
# What argparse resolves a flag against: ``--<field>`` (``_`` → ``-``) for every field, and the aliases.
OPTIONS = {name.replace("_", "-"): name for name in FIELD_KINDS} | ALIASES
# The entry points a launch command runs (CUR and older): what follows them are SGLang's options.
LAUNCH = re.compile(
    r"(?:^|\s)(?:-m\s+sglang\.launch_server|\S*sglang/launch_server\.py|\S*sglang\s+serve)(?:\s|$)"
)


@dataclass
class Parsed:
    """What a parse kept: ``fields`` (``{field: value}``, Python values: str, int, float, bool,
    None, list, dict), ``complete`` (False when the text was cut or a value could not be read) and
    ``notes`` (what was skipped or guessed, and why)."""

    fields: dict = field(default_factory=dict)
    complete: bool = True
    notes: list[str] = field(default_factory=list)


class _Cut(Exception):
    """The text ended inside a value."""


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "0": "\0"}


def _unescape(s: str, i: int) -> tuple[str, int]:
    """The text a backslash escape at ``s[i]`` stands for in a Python ``repr`` (``\\n``, ``\\x41``,
    ``\\u00e9``, ``\\U0001f600``), and the index after it; an unknown escape, or
    one whose hex digits are cut or wrong, is kept as written. ``s[i + 1]`` must exist."""
    nxt = s[i + 1]
    width = {"x": 2, "u": 4, "U": 8}.get(nxt)
    if width and i + 2 + width <= len(s):
        try:
            return chr(int(s[i + 2 : i + 2 + width], 16)), i + 2 + width
        except ValueError:
            pass
    return _ESCAPES.get(nxt, "\\" + nxt), i + 2


class _Reader:
    """A cursor over a Python ``repr`` text."""

    NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|inf|nan)(?![\w.])")
    IDENT = re.compile(r"[A-Za-z_][\w.]*")

    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0

    def ws(self) -> None:
        while self.i < len(self.s) and self.s[self.i] in " \t\r\n":
            self.i += 1

    def peek(self) -> str:
        self.ws()
        if self.i >= len(self.s):
            raise _Cut
        return self.s[self.i]

    def value(self):
        c = self.peek()
        if c in "'\"":
            return self.string()
        if c in "[(":
            return self.sequence("]" if c == "[" else ")")
        if c == "{":
            return self.mapping()
        if c == "<":  # <Enum.NAME: 1>, <object at 0x…>
            end = self.s.find(">", self.i)
            if end < 0:
                raise _Cut
            text, self.i = self.s[self.i : end + 1], end + 1
            return text
        m = self.NUMBER.match(self.s, self.i)
        if m:
            self.i = m.end()
            text = m.group()
            if text.lstrip("+-") in ("inf", "nan"):
                return float(text)
            return float(text) if any(ch in text for ch in ".eE") else int(text)
        m = self.IDENT.match(self.s, self.i)
        if m:
            self.i = m.end()
            name = m.group()
            if name in ("None", "True", "False"):
                return {"None": None, "True": True, "False": False}[name]
            if self.i < len(self.s) and self.s[self.i] == "(":
                return self.call(name)
            return name  # a bare name (an enum member printed by str)
        raise ValueError(f"unexpected {self.s[self.i : self.i + 20]!r}")

    def string(self) -> str:
        quote, self.i, out = self.s[self.i], self.i + 1, []
        while self.i < len(self.s):
            ch = self.s[self.i]
            if ch == quote:
                self.i += 1
                return "".join(out)
            if ch == "\\" and self.i + 1 < len(self.s):
                text, self.i = _unescape(self.s, self.i)
                out.append(text)
                continue
            out.append(ch)
            self.i += 1
        raise _Cut

    def sequence(self, close: str) -> list:
        self.i += 1
        items: list = []
        while self.peek() != close:
            items.append(self.value())
            if self.peek() == ",":
                self.i += 1
        self.i += 1
        return items

    def mapping(self):
        self.i += 1
        out: dict = {}
        items: list = []  # a set literal
        while self.peek() != "}":
            key = self.value()
            if self.peek() == ":":
                self.i += 1
                out[str(key)] = self.value()
            else:
                items.append(key)
            if self.peek() == ",":
                self.i += 1
        self.i += 1
        return items if items and not out else out

    def call(self, name: str) -> dict:
        """``Name(k=v, …)`` → ``{"__class__": Name, k: v}``; ``Name(a, …)`` → ``{"__class__": Name,
        "args": [a, …]}``."""
        self.i += 1
        out: dict = {"__class__": name}
        args: list = []
        while self.peek() != ")":
            m = re.compile(r"([A-Za-z_]\w*)\s*=(?!=)").match(self.s, self.i)
            if m:
                self.i = m.end()
                out[m.group(1)] = self.value()
            else:
                args.append(self.value())
            if self.peek() == ",":
                self.i += 1
        self.i += 1
        if args:
            out["args"] = args
        return out


_NEXT_FIELD = re.compile(r",\s*([A-Za-z_]\w*)=")


def parse_server_args(text: str) -> Parsed:
    """The fields of a ``server_args=ServerArgs(…)`` line (any SGLang version since 2024-07).

    Args:
        text: the line, or any text holding ``server_args=ServerArgs(`` (a prefix such as
            ``[ts] INFO engine.py:177:`` is ignored).

    Returns:
        ``Parsed``: ``fields`` in printed order with Python values (a nested ``Name(k=v)`` repr as a
        dict with ``__class__``); ``complete`` False and a note when the line is cut (the fields read
        before the cut are kept; the one cut in half is dropped) or a value could not be read (kept
        as its raw text, the note names it). No ``server_args`` in ``text``: empty fields, a note.
    """
    out = Parsed()
    start = text.find(MARKER)
    if start < 0:
        out.complete = False
        out.notes.append("no server_args=ServerArgs( in the text")
        return out
    end = text.find("\n", start)  # repr escapes newlines: the line ends the value
    r = _Reader(text[: end if end >= 0 else len(text)])
    r.i = start + len(MARKER)
    try:
        while True:
            r.ws()
            if r.i >= len(r.s):
                raise _Cut
            if r.s[r.i] == ")":
                return out
            m = re.compile(r"([A-Za-z_]\w*)=").match(r.s, r.i)
            if not m and re.fullmatch(r"[A-Za-z_]\w*\s*", r.s[r.i :]):
                raise _Cut  # cut inside a field's name
            if not m:
                raise ValueError(f"expected field=value at {r.s[r.i : r.i + 30]!r}")
            name, r.i = m.group(1), m.end()
            begin = r.i
            try:
                out.fields[name] = r.value()
            except ValueError:
                nxt = _NEXT_FIELD.search(r.s, begin)
                end = nxt.start() if nxt else len(r.s.rstrip().rstrip(")"))
                out.fields[name] = r.s[begin:end]
                out.complete = False
                out.notes.append(f"{name}: value not readable, kept as text")
                r.i = end
            if r.peek() == ",":
                r.i += 1
    except _Cut:
        out.complete = False
        last = next(reversed(out.fields), None)
        out.notes.append(
            f"line cut short: {len(out.fields)} fields read"
            + (f", the last complete one {last}" if last else "")
        )
    except (ValueError, RecursionError, IndexError) as e:
        out.complete = False
        out.notes.append(f"stopped after {len(out.fields)} fields: {e}")
    return out


def _convert(value: str, kind: str | None):
    """A command-line token as the field's type (``int``, ``float``; a number for a field whose
    type the list does not show); text otherwise."""
    if kind in (None, "none", "list"):
        if re.fullmatch(r"-?\d+", value):
            return int(value)
        if re.fullmatch(r"-?(?:\d+\.\d*|\.\d+)(?:[eE][-+]?\d+)?", value):
            return float(value)
        return value
    try:
        return {"int": int, "float": float}.get(kind, str)(value)
    except ValueError:
        return value


def _resolve(flag: str, options: dict[str, str]) -> tuple[str | None, list[str]]:
    """``flag`` (without ``--``) → the field it sets, as argparse resolves it: exact name, alias,
    else the one option it is a prefix of. Returns (field or None, the candidates when ambiguous)."""
    if flag in options:
        return options[flag], []
    hits = sorted({name for name in options if name.startswith(flag)})
    fields = {options[h] for h in hits}
    if len(hits) == 1 or (hits and len(fields) == 1):
        return options[hits[0]], []
    return None, hits


def parse_cmdline(text: str) -> Parsed:
    """The settings a launch command line states (journald ``_CMDLINE``, argv joined by spaces).

    Args:
        text: e.g. ``/venv/bin/python3 -m sglang.launch_server --model-path /m --tp 8 --disable-overlap-schedule``.

    Returns:
        ``Parsed``: ``fields`` ``{field: value}`` for each option given, by SGLang's field names
        (``--tp 8`` → ``tp_size: 8``; a prefix resolves as argparse does against the options of
        SGLang 2026-02, ``FIELD_KINDS``); a boolean field's flag → ``True``; ``int``/``float`` fields
        converted; an option taking several values → a list. ``complete`` False with a note for an
        ambiguous prefix (kept under the flag's own name) or an option SGLang's list lacks (kept,
        named). Not a SGLang launch (no ``sglang.launch_server`` / ``sglang serve``): empty fields
        and a note. Only what is written is returned: defaults are not filled in.
    """
    out = Parsed()
    m = LAUNCH.search(text or "")
    if not m:
        out.complete = False
        out.notes.append("not an SGLang launch command")
        return out
    tokens = text[m.end() :].split()
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        i += 1
        if not tok.startswith("--") or tok == "--":
            continue  # a stray value (or a short option SGLang does not declare)
        flag, eq, inline = tok[2:].partition("=")
        name, ambiguous = _resolve(flag, OPTIONS)
        kind = FIELD_KINDS.get(name) if name else None
        if name is None:
            out.complete = False
            out.notes.append(
                f"--{flag}: ambiguous prefix of {', '.join('--' + h for h in ambiguous)}"
                if ambiguous
                else f"--{flag}: not an option of SGLang 2026-02 (kept as given)"
            )
            name = flag.replace("-", "_")
        values = [inline] if eq else []
        if not eq and kind != "bool":
            while i < len(tokens) and not (tokens[i].startswith("--") or re.match(r"-[A-Za-z]", tokens[i])):
                values.append(tokens[i])
                i += 1
        if kind == "bool":
            out.fields[name] = not eq or inline.lower() in ("1", "true", "yes")
        elif not values:
            out.fields[name] = True  # a flag of an option the list does not know
        elif len(values) == 1 and kind != "list":
            out.fields[name] = _convert(values[0], kind)
        else:
            out.fields[name] = [_convert(v, kind) for v in values]
    return out


def to_json(fields: dict) -> str:
    """``fields`` as JSON text (inf/nan as strings, so any JSON reader takes it)."""

    def clean(v):
        if isinstance(v, float) and not math.isfinite(v):
            return str(v)
        if isinstance(v, dict):
            return {str(k): clean(x) for k, x in v.items()}
        if isinstance(v, list):
            return [clean(x) for x in v]
        return v

    return json.dumps(clean(fields), ensure_ascii=False, default=str)
