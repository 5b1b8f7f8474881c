"""Saved queries: the ``queries/*.sql`` files, their header, and running them (or any SQL) on OUT.

A saved query is one ``.sql`` file holding one question, like a datasette saved query: the file
opens with a comment header, then one ``SELECT`` (or ``WITH … SELECT``). The header has sections,
each a line ``-- key: text`` followed by indented ``--`` lines that continue it::

    -- question: Which aborts preceded each transfer_infos assertion, for the same room?
    -- tables: transfer_errors, aborts, rooms, requests, events
    -- columns:
    --   bootstrap_room   the room the assertion names (int64)
    --   delta_ms         assertion time minus abort time, in ms; positive = the abort came first
    -- parameters:
    --   room   only this bootstrap room (default: every room)
    -- reading: one row per (assertion, abort) …

``question``, ``tables`` and ``columns`` are required; ``parameters`` must list every
``getvariable('name')`` the SQL uses (that is how parameters are found, as datasette finds
``:name``); ``reading`` says how to read the answer. ``SavedQuery.problems()`` names what is missing,
and a test fails on any shipped query that has a problem.

Parameters are DuckDB variables: ``--param room=123`` becomes ``SET VARIABLE room = '123'`` before
the query runs (values are text; the SQL casts them, e.g. ``getvariable('room')::BIGINT``). In the
DuckDB shell the same works by hand: ``SET VARIABLE room = 123; SELECT * FROM abort_to_assert;``.

The queries run on an in-memory DuckDB connection holding one view per Parquet table of OUT (read
in place, nothing copied) plus one view per saved query, so saved queries may use each other.
Timestamps are shown in UTC.
"""

from __future__ import annotations

import contextlib
import csv
import difflib
import functools
import io
import json
import math
import os
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from pathlib import Path

import duckdb
import polars as pl

from logcorr import interrupts
from logcorr.analysis import finding_kinds, known_issues
from logcorr.analysis.shipped import shipped_families, shipped_queries
from logcorr.interrupts import is_interrupt
from logcorr.store.output import stable_out
from logcorr.store.views import (
    derived_view_sql,
    parquet_glob,
    parquet_view_sql,
    quote_ident,
    quote_literal,
    table_folders,
)

FORMATS = ("table", "vertical", "csv", "json", "markdown")
SECTION_ALIASES = {
    **{key: key for key in ("question", "tables", "columns", "parameters", "reading", "name")},
    "tables read": "tables",
    "reads": "tables",
    "columns returned": "columns",
    "returns": "columns",
    "params": "parameters",
    "how to read": "reading",
    "how to read the answer": "reading",
}
_SECTION_LINE = re.compile(r"^(?P<key>[A-Za-z][A-Za-z ]*?)\s*:\s*(?P<rest>.*)$")
_ENTRY = re.compile(
    r"^(?:[-*]\s+)?`?(?P<name>[A-Za-z_][A-Za-z0-9_]*)`?(?:\s*(?::|—|–|-|\s)\s*(?P<text>.*))?$"
)
_GETVARIABLE = re.compile(r"getvariable\(\s*'([A-Za-z_][A-Za-z0-9_]*)'\s*\)", re.IGNORECASE)
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class QueryError(Exception):
    """A query could not run: bad SQL, a missing table or column, a bad parameter. The message
    names the query and, where there is one, the fix."""


class UnknownQueryError(QueryError):
    """The name is neither a saved query, nor a ``.sql`` file, nor SQL."""


class ParamError(QueryError):
    """A ``--param`` is malformed or names a parameter the saved query does not take."""


@dataclass(frozen=True)
class SavedQuery:
    """One saved question: its SQL and the header that documents it.

    ``columns`` and ``parameters`` are ``(name, description)`` pairs in header order; ``path`` is the
    file it came from (``None`` for text parsed directly).
    """

    name: str
    sql: str
    question: str = ""
    tables: tuple[str, ...] = ()
    columns: tuple[tuple[str, str], ...] = ()
    parameters: tuple[tuple[str, str], ...] = ()
    reading: str = ""
    path: str | None = None

    @property
    def column_names(self) -> list[str]:
        """The documented column names, in order."""
        return [c for c, _ in self.columns]

    @property
    def used_parameters(self) -> list[str]:
        """Parameters the SQL reads (every ``getvariable('name')``), sorted, without duplicates."""
        return sorted(set(_GETVARIABLE.findall(self.sql)))

    def problems(self) -> list[str]:
        """What the header lacks: a missing required section, an undocumented parameter, a
        documented parameter the SQL never reads. Empty when the query is fully documented."""
        out = []
        for key in ("question", "tables", "columns"):  # the required sections
            if not getattr(self, key):
                out.append(f"{self.name}: no '-- {key}:' section in the header")
        documented = {p for p, _ in self.parameters}
        for p in self.used_parameters:
            if p not in documented:
                out.append(f"{self.name}: parameter {p!r} is used but not documented under '-- parameters:'")
        for p in sorted(documented - set(self.used_parameters)):
            out.append(f"{self.name}: parameter {p!r} is documented but the SQL never reads it")
        return out

    def body(self) -> str:
        """The SQL without trailing semicolons or whitespace, ready for ``CREATE VIEW … AS``."""
        return self.sql.strip().rstrip(";").rstrip()


def parse_saved(text: str, name: str, path: str | None = None) -> SavedQuery:
    """Parse one saved query file: the leading ``--`` comment header, then the SQL.

    Args:
        text: the file's content.
        name: the query's name (the file stem); a ``-- name:`` line overrides it.
        path: where the text came from, kept for messages.

    Returns:
        A ``SavedQuery``. Never raises on a malformed header: what it could not find stays empty
        and ``problems()`` reports it.
    """
    header: list[str] = []
    for stripped in (line.strip() for line in text.splitlines()):
        if stripped.startswith("--"):
            header.append(stripped[2:])
        elif stripped or header:  # blank lines before the header are skipped
            break
    sections: dict[str, list[str]] = {}
    inline: set[str] = set()  # sections whose text starts on the key line: lists, not entry lines
    current: str | None = None
    for raw in header:
        line = raw[1:] if raw.startswith(" ") else raw
        match = _SECTION_LINE.match(line) if not line.startswith((" ", "\t")) else None
        key = SECTION_ALIASES.get(match["key"].strip().lower()) if match else None
        if key:
            current = key
            sections[key] = [match["rest"]] if match["rest"].strip() else []
            if match["rest"].strip():
                inline.add(key)
        elif current is not None:
            sections[current].append(line)
    text_of = {k: _join(v) for k, v in sections.items()}
    tables = tuple(
        m.group(0)
        for item in _top_level_items(_first_sentence(text_of.get("tables", "")))
        if (m := re.match(r"[A-Za-z_][A-Za-z0-9_]*", item.strip()))
    )
    return SavedQuery(
        name=text_of.get("name", "").strip() or name,
        sql=text,
        question=text_of.get("question", ""),
        tables=tables,
        columns=_entries(sections.get("columns", []), "columns" in inline),
        parameters=()
        if re.match(r"(?i)none\b", text_of.get("parameters", ""))
        else _entries(sections.get("parameters", []), "parameters" in inline),
        reading=text_of.get("reading", ""),
        path=path,
    )


def _join(lines: list[str]) -> str:
    return " ".join(line.strip() for line in lines if line.strip())


def _first_sentence(text: str) -> str:
    """Text up to the first ". " outside parentheses (a list, then prose about it)."""
    depth = 0
    for i, ch in enumerate(text):
        depth += (ch in "([{") - (ch in ")]}")
        if ch == "." and depth == 0 and (i + 1 == len(text) or text[i + 1].isspace()):
            return text[:i]
    return text


def _top_level_items(text: str) -> list[str]:
    """Split on commas outside parentheses and quotes: ``a, b ("x", "y"), c`` → 3 items."""
    items, depth, quote, cur = [], 0, None, []
    for ch in text:
        if quote:
            quote = None if ch == quote else quote
        elif ch in "\"'`":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    items.append("".join(cur))
    return [i for i in items if i.strip()]


def _entries(lines: list[str], inline: bool) -> tuple[tuple[str, str], ...]:
    """The entries of a columns/parameters section, in one of two layouts:

    * one per line, ``name  description`` (or ``name: description``, ``- name — description``); a
      line indented deeper than the entries continues the last one;
    * a comma-separated list starting on the section line itself: ``-- Columns: a, b (what b is), c.``
    """
    if inline:
        items = _top_level_items(_first_sentence(_join(lines)))
        found = (re.match(r"\s*`?([A-Za-z_][A-Za-z0-9_]*)`?\s*(.*)$", item, re.S) for item in items)
        return tuple((m[1], m[2].strip().strip("()").strip()) for m in found if m)
    items: list[list[str]] = []
    indent = None
    for line in lines:
        if not line.strip():
            continue
        depth = len(line) - len(line.lstrip())
        if indent is None:
            indent = depth
        m = _ENTRY.match(line.strip())
        if depth <= indent and m:
            items.append([m["name"], (m["text"] or "").strip()])
        elif items:
            items[-1][1] = (items[-1][1] + " " + line.strip()).strip()
    return tuple((n, t) for n, t in items)


_LOADED: dict[tuple, dict[str, SavedQuery]] = {}


def _sources_signature(extra_dirs: tuple[Path, ...]) -> tuple | None:
    """What ``load_saved`` reads, as (path, mtime ns, size) of every file and the environment's
    folders: equal signatures mean equal queries. ``None`` for queries installed as package data."""
    shipped = shipped_queries()
    if not isinstance(shipped, Path):
        return None
    env = (os.environ.get("LOGCORR_QUERIES", ""), os.environ.get("LOGCORR_KNOWN_ISSUES", ""))
    folders = [shipped, *extra_dirs, *(Path(p) for e in env for p in e.split(os.pathsep) if p)]
    files = []
    for folder in folders:
        for path in sorted(Path(folder).rglob("*.sql")) if Path(folder).is_dir() else ():
            st = path.stat()
            files.append((str(path), st.st_mtime_ns, st.st_size))
    return (tuple(map(str, extra_dirs)), env, tuple(files))


def load_saved(extra_dirs: tuple[Path, ...] = ()) -> dict[str, SavedQuery]:
    """Every saved query: those shipped in ``logcorr.queries`` (see ``shipped_queries``), then those in ``extra_dirs`` and in
    the folders of ``$LOGCORR_QUERIES`` (``os.pathsep``-separated), a later one replacing an earlier
    one of the same name. Files whose name starts with ``_`` are skipped. Returns ``{name: query}``
    sorted by name (a new dict; parsed once a process while no file it reads changes)."""
    key = _sources_signature(tuple(extra_dirs))
    if key is not None and key in _LOADED:
        return dict(_LOADED[key])
    loaded = _load_saved(tuple(extra_dirs))
    if key is not None:
        _LOADED.clear()  # one signature kept: a changed file replaces it
        _LOADED[key] = loaded
    return dict(loaded)


def _load_saved(extra_dirs: tuple[Path, ...]) -> dict[str, SavedQuery]:
    found: dict[str, SavedQuery] = {}
    for entry in sorted(shipped_queries().iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".sql") and not entry.name.startswith("_"):
            q = parse_saved(entry.read_text(encoding="utf-8"), entry.name[:-4], str(entry))
            found[q.name] = q
    for name, text in known_issues.saved_queries().items():
        found[name] = parse_saved(text, name, str(shipped_families()))
    made = finding_kinds.saved_query(lambda text, name: parse_saved(text, name).body())
    found["findings"] = parse_saved(made, "findings", str(finding_kinds.shipped_folder()))
    env_dirs = tuple(Path(p) for p in os.environ.get("LOGCORR_QUERIES", "").split(os.pathsep) if p)
    for folder in (*extra_dirs, *env_dirs):
        for path in sorted(Path(folder).glob("*.sql")):
            if not path.name.startswith("_"):
                q = parse_saved(path.read_text(encoding="utf-8"), path.stem, str(path))
                found[q.name] = q
    return dict(sorted(found.items()))


def uses(q: SavedQuery, saved: dict[str, SavedQuery]) -> list[str]:
    """The other saved queries ``q`` reads as views, directly or through them, sorted."""
    return list(_uses(q.name, q.sql, tuple((n, v.sql) for n, v in saved.items())))


@functools.lru_cache(maxsize=1024)
def _uses(name: str, sql: str, saved: tuple[tuple[str, str], ...]) -> tuple[str, ...]:
    """``uses`` of the query ``name`` of text ``sql`` among ``saved`` (``(name, sql)`` pairs): the same
    texts give the same answer, so each ingest's views and each connection stop scanning them again."""
    texts = dict(saved)
    if not texts:
        return ()
    # one pass per query over its text for every name (a search per name was 0.5 s per ingest)
    named = re.compile(r"\b(" + "|".join(sorted(map(re.escape, texts), key=len, reverse=True)) + r")\b")
    found: set[str] = set()
    todo = [sql]
    while todo:
        text = re.sub(r"--[^\n]*", "", todo.pop())  # a name in a comment uses no view
        for other in set(named.findall(text)) - found - {name}:
            found.add(other)
            todo.append(texts[other])
    return tuple(sorted(found))


def views_for(names_or_sql: list[str], saved: dict[str, SavedQuery]) -> set[str]:
    """The saved queries that running each of ``names_or_sql`` (saved names or SQL text, as ``query``
    takes them) reads as views: ``connect``'s ``only`` for a caller that runs just these (a view each
    costs its bind, ~0.02-0.1 CPU s). Raises ``UnknownQueryError`` for a word that is no saved query."""
    found: set[str] = set()
    for text in names_or_sql:
        found |= set(uses(resolve(text, saved), saved))
    return found


def all_parameters(q: SavedQuery, saved: dict[str, SavedQuery]) -> list[str]:
    """Parameters ``q`` reads itself or through the saved queries it uses, sorted."""
    names = set(q.used_parameters)
    for other in uses(q, saved):
        names |= set(saved[other].used_parameters)
    return sorted(names)


def view_order(saved: dict[str, SavedQuery]) -> list[SavedQuery]:
    """Saved queries ordered so that one using another's view comes after it (by name mention)."""
    pending = {n: set(uses(q, saved)) for n, q in saved.items()}
    ordered: list[str] = []
    while pending:
        # none ready: a cycle; keep file order, the views will report the error
        ready = sorted(n for n, d in pending.items() if d <= set(ordered)) or sorted(pending)
        for n in ready:
            ordered.append(n)
            pending.pop(n)
    return [saved[n] for n in ordered]


# DuckDB 2.0's projection pull-up is half of the optimizer's time on the saved queries' plans (the
# ``findings`` composite: 0.24 of 0.45 CPU s on a small OUT) and bought no execution time on any OUT
# measured (findings at 64 hosts: 3.1-3.5 CPU s with it, 3.1-3.2 without).
SKIPPED_OPTIMIZERS = "projection_pullup"


def connect(
    out: Path, saved: dict[str, SavedQuery] | None = None, only: set[str] | None = None
) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection over OUT: a view per Parquet table (absolute paths), a view per
    saved query (or only the saved queries named in ``only``: binding every view costs ~0.4 CPU s; see
    ``uses`` for what a query needs), ``TimeZone`` UTC.

    Raises:
        FileNotFoundError: OUT does not exist.
    """
    con = interrupts.connect()
    con.execute("SET TimeZone = 'UTC'")
    with contextlib.suppress(duckdb.Error):  # a DuckDB that names its optimizers otherwise plans as it will
        con.execute(f"SET disabled_optimizers = {quote_literal(SKIPPED_OPTIMIZERS)}")
    folders = table_folders(stable_out(Path(out)))  # never a folder an ingest is swapping in
    for table, folder in folders.items():
        con.execute(parquet_view_sql(table, parquet_glob(folder), folder=folder))
    for sql in derived_view_sql(folders):
        con.execute(sql)
    saved = saved if saved is not None else load_saved()
    add_views(con, set(saved) if only is None else only, saved)
    return con


def add_views(con: duckdb.DuckDBPyConnection, names: set[str], saved: dict[str, SavedQuery]) -> None:
    """A view on ``con`` for each saved query of ``names`` (one read by another first: give the views a
    query reads with ``views_for``); a name that is no saved query is passed over. A query that does not
    bind here is left out (it fails with its own message when it is run). Raises only an interrupt."""
    for q in view_order({n: q for n, q in saved.items() if n in names}):
        try:
            con.execute(f"CREATE OR REPLACE VIEW {quote_ident(q.name)} AS {q.body()}")
        except duckdb.Error as e:
            if is_interrupt(e):
                raise


def hold(con: duckdb.DuckDBPyConnection, names: list[str]) -> list[str]:
    """Compute each of the saved views ``names`` of ``con`` once (in this order: one read by a later one
    first) into a temporary table of the same name, which shadows the view for every later statement on
    ``con`` (DuckDB resolves the temp schema first, inside other views too): for a caller that runs
    several queries reading the same views with no parameter set, which each planned and ran again.
    Returns the names held; a view that does not run here is left as it is (a query reading it fails
    with its own message). Raises only an interrupt."""
    held = []
    for name in names:
        try:
            con.execute(f"CREATE TEMP TABLE {quote_ident(name)} AS SELECT * FROM main.{quote_ident(name)}")
            held.append(name)
        except duckdb.Error as e:
            if is_interrupt(e):
                raise
    return held


def parse_params(pairs: list[str] | dict[str, str] | None) -> dict[str, str]:
    """``["k=v", …]`` (or a dict) → ``{k: v}``. Raises ``ParamError`` on a pair without ``=``, a
    name that is not an identifier, or a value that is not valid UTF-8."""
    if pairs is None:
        return {}
    items = pairs.items() if isinstance(pairs, dict) else [_split_pair(p) for p in pairs]
    params = {}
    for k, v in items:
        if not _IDENT.match(k):
            raise ParamError(f"--param {k}={v}: the name must be an identifier (letters, digits, _)")
        params[k] = "" if v is None else str(v)
        try:
            params[k].encode("utf-8")
        except UnicodeEncodeError:  # bytes the shell passed that are no text ($'\xff')
            shown = params[k].encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            raise ParamError(f"--param {k}={shown}: the value is not valid UTF-8 text") from None
    return params


def _split_pair(pair: str) -> tuple[str, str]:
    k, sep, v = pair.partition("=")
    if not sep:
        raise ParamError(f"--param {pair!r}: expected NAME=VALUE, e.g. --param room=123")
    return k.strip(), v


def resolve(name_or_sql: str, saved: dict[str, SavedQuery]) -> SavedQuery:
    """Turn what the user typed into a query: a saved name, a path to a ``.sql`` file, or SQL text.

    Raises:
        UnknownQueryError: a single word that is no saved query.
    """
    text = name_or_sql.strip()
    if text in saved:
        return saved[text]
    if text.endswith(".sql") and Path(text).is_file():
        path = Path(text)
        return parse_saved(path.read_text(encoding="utf-8"), path.stem, str(path))
    if text.endswith(".sql") and not any(c.isspace() for c in text):
        raise UnknownQueryError(f"{text}: no such file (a .sql file to run, or quote SQL text)")
    if _IDENT.match(text):
        close = [n for n in saved if text.lower() in n.lower() or n.lower() in text.lower()]
        close += [n for n in difflib.get_close_matches(text, list(saved), n=2) if n not in close]
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        raise UnknownQueryError(
            f"no saved query named {text!r}.{hint} `logcorr query --list` shows them; quote SQL to run it"
        )
    return SavedQuery(name="sql", sql=text)


def query(
    out: Path,
    name_or_sql: str,
    params: list[str] | dict[str, str] | None = None,
    *,
    saved: dict[str, SavedQuery] | None = None,
    con: duckdb.DuckDBPyConnection | None = None,
) -> pl.DataFrame:
    """Run a saved query (by name or ``.sql`` path) or any SQL against OUT; return the rows.

    Args:
        out: the ingest output folder (``OUT/<table>/**/*.parquet``).
        name_or_sql: a saved query's name, a path to a ``.sql`` file, or SQL text.
        params: ``["k=v", …]`` or ``{k: v}``: DuckDB variables set before the query runs.
        saved: the saved queries (default ``load_saved()``).
        con: a connection from ``connect(out)`` to reuse; ``params`` are set for this call only (a
            variable set on ``con`` by hand with ``SET VARIABLE`` stays and applies).

    Returns:
        A polars DataFrame; timestamps are ``Datetime("us", "UTC")``.

    Raises:
        UnknownQueryError, ParamError, QueryError (SQL errors, with the query's name);
        FileNotFoundError when OUT does not exist.
    """
    with _running(out, name_or_sql, params, saved, con) as (con, q, values, saved):
        try:
            return rows_of(con, q.body())
        except duckdb.Error as e:
            if is_interrupt(e):
                raise
            raise _query_error(e, con, q, values, saved, out) from e


def rows_of(con: duckdb.DuckDBPyConnection, sql: str) -> pl.DataFrame:
    """The rows of ``sql`` (a statement, or a script whose last statement gives the rows) on ``con``
    as a polars DataFrame, bound once: DuckDB 2.0's ``con.sql(sql).pl()`` binds a statement twice (the
    relation, then its run), a quarter of a small query's CPU. The copy of the rows DuckDB warns of
    is the price, which the results read whole (findings, chains, a report's rows) afford.

    Raises:
        duckdb.Error: the statement fails.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Arrow output on a DB-API result", UserWarning)
        return pl.from_arrow(con.execute(sql).to_arrow_table())


@contextlib.contextmanager
def _running(out: Path, name_or_sql: str, params, saved, con) -> Iterator[tuple]:
    """The saved query ``name_or_sql`` resolved, its parameters checked and set as DuckDB variables on
    ``con`` (made by ``connect`` when None) for the block, which gets ``(con, q, values, saved)``;
    the variables reset when it ends. Raises ``UnknownQueryError``, ``ParamError``."""
    saved = load_saved() if saved is None else saved
    q = resolve(name_or_sql, saved)
    values = parse_params(params)
    if q.name in saved and q.path is not None:
        takes = all_parameters(q, saved)
        unknown = sorted(set(values) - set(takes))
        if unknown:
            takes = ", ".join(takes) or "none"
            raise ParamError(f"{q.name} has no parameter {', '.join(unknown)}; it takes: {takes}")
    if con is None:  # the views this query reads, not every saved one
        con = connect(out, saved, only=set(uses(q, saved)))
    for k, v in values.items():
        con.execute(f"SET VARIABLE {quote_ident(k)} = {quote_literal(v)}")  # AT, SELECT …: reserved words
    try:
        yield con, q, values, saved
    finally:
        for k in values:  # each call stands alone: no parameter leaks into the next query on ``con``
            con.execute(f"RESET VARIABLE {quote_ident(k)}")


def _query_error(e: duckdb.Error, con, q: SavedQuery, values: dict, saved: dict, out: Path) -> Exception:
    """The error to raise (``from e``) for DuckDB's ``e`` while ``q`` ran: ``ParamError`` naming a
    parameter whose value the query cannot read, else ``QueryError`` with the query's name (and a saved
    query's own error, or the tables here). Not for an interrupt (``is_interrupt``): raise that as it is."""
    said = str(e)  # DuckDB quotes the value, or shows the SQL line reading the variable
    if isinstance(e, duckdb.ConversionException):
        bad = [k for k in values if f"getvariable('{k}')" in said] or [
            k for k, v in values.items() if f"'{v}'" in said or f'"{v}"' in said
        ]
        if bad:
            described = dict(q.parameters)
            what = f"; {bad[0]} is {described[bad[0]]}" if bad[0] in described else ""
            return ParamError(
                f"--param {bad[0]}={values[bad[0]]}: not a value {q.name} can read for {bad[0]}{what}"
            )
        return QueryError(f"{q.name}: {said.strip()}")
    missing = re.search(r"Table with name (\w+) does not exist", said)
    if missing and missing[1] in saved:  # a saved query that did not bind as a view: its own error
        try:
            con.sql(saved[missing[1]].body()).limit(0).fetchall()
        except duckdb.Error as inner:
            return QueryError(f"{q.name}: the saved query {missing[1]} fails: {str(inner).strip()}")
    hint = ""
    if isinstance(e, duckdb.CatalogException):
        hint = " (tables here: " + ", ".join(sorted(table_folders(Path(out)))) + ")"
    return QueryError(f"{q.name}: {said.strip()}{hint}")


def run_query(out: Path, name_or_sql: str, params=None, fmt: str = "table", **options) -> str:
    """``render_query`` as one text: the rows, then the note on rows not shown (for a reader of text)."""
    text, note = render_query(out, name_or_sql, params, fmt, **options)
    return text + (f"\n{note}" if note else "")


def render_query(
    out: Path,
    name_or_sql: str,
    params: list[str] | dict[str, str] | None = None,
    fmt: str = "table",
    *,
    limit: int | None = None,
    columns: list[str] | None = None,
    width: int | None = None,
) -> tuple[str, str | None]:
    """``query(...)`` rendered as text, and the note on the rows ``limit`` left out (None when none
    was): ``(text, note)``; a program reading csv or json gets the note apart (the CLI prints it on
    stderr). Formats: ``table`` (aligned columns), ``vertical`` (one block per row,
    ``column: value``), ``csv``, ``json`` (a list of objects) or ``markdown``. Timestamps print as
    ISO 8601 UTC with µs (``2025-10-29T21:34:47.000000Z``). ``limit`` keeps the first rows (the count
    of the others is said); ``columns`` picks and orders columns; a ``table`` wider than ``width``
    characters (the terminal's) is printed ``vertical``.

    Raises:
        ValueError: an unknown ``fmt`` (checked before anything runs). QueryError: a column in
        ``columns`` the result lacks; otherwise as ``query``.
    """
    stream = QueryStream(out, name_or_sql, params, fmt, limit=limit, columns=columns, width=width)
    return "".join(stream)[:-1], stream.note


BATCH_ROWS = 20_000  # rows per piece of a streamed result (``QueryStream``)
WINDOW_ROWS = 20_000  # the first rows a table's column widths are laid out from (``QueryStream``)
STREAMED = ("csv", "json")  # the formats a program reads (the CLI prints them raw to a pipe)


class QueryStream:
    """``render_query``'s text in bounded memory, for a result of any size (all events of a day's OUT
    piped into another tool, or paged): iterate to get the text in pieces, one per batch of at most
    ``batch_rows`` rows as DuckDB produces them (``to_arrow_reader``), never the whole result at once;
    joined, they are the text ``render_query`` gives plus a final newline. Every format streams: csv,
    json, markdown and vertical row by row; ``table`` lays its column widths out from the first
    ``window_rows`` rows (a later cell wider than its column pushes its line on, whole: no cell is cut
    but at the 100 characters every table cuts at), and a table wider than ``width`` (a terminal's
    columns) is printed ``vertical``. ``limit`` stops the text after that many rows; the rows it leaves
    out are still counted, batch by batch, and once the iteration ends ``note`` says how many (None when
    none were). Raises, while iterated, what ``query`` raises (``QueryError`` also for a ``columns``
    name the result lacks); ``ValueError`` at once for a ``fmt`` not in ``FORMATS``."""

    def __init__(
        self,
        out: Path,
        name_or_sql: str,
        params: list[str] | dict[str, str] | None = None,
        fmt: str = "csv",
        *,
        limit: int | None = None,
        columns: list[str] | None = None,
        batch_rows: int = BATCH_ROWS,
        width: int | None = None,
        window_rows: int = WINDOW_ROWS,
    ) -> None:
        if fmt not in FORMATS:
            raise ValueError(f"--format {fmt!r}: expected one of {', '.join(FORMATS)}")
        self.out, self.name_or_sql, self.params, self.fmt = out, name_or_sql, params, fmt
        self.limit, self.columns, self.batch_rows = limit, columns, batch_rows
        self.width, self.window_rows = width, window_rows
        self.note: str | None = None

    def __iter__(self) -> Iterator[str]:
        with _running(self.out, self.name_or_sql, self.params, None, None) as (con, q, values, saved):
            try:
                yield from self._pieces(con.sql(q.body()).to_arrow_reader(self.batch_rows))
            except duckdb.Error as e:
                if is_interrupt(e):
                    raise
                raise _query_error(e, con, q, values, saved, self.out) from e

    def _pieces(self, reader) -> Iterator[str]:
        names = reader.schema.names
        # a result whose columns repeat a name (`SELECT b.*, e.role … JOIN`) has no frame to lay out
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise QueryError(
                f"the result's columns repeat a name: {', '.join(repeated)}; give each its own (`e.role AS event_role`)"
            )
        missing = [c for c in self.columns or [] if c not in names]
        if missing:
            raise QueryError(
                f"--columns {', '.join(missing)}: not in the result; its columns: {', '.join(names)}"
            )
        counted = {"more": 0}
        yield from _layout(
            self.fmt, self.columns or names, self._frames(reader, counted), self.width, self.window_rows
        )
        more = counted["more"]
        self.note = f"({more:,} more row(s) not shown: --limit {self.limit})" if more else None

    def _frames(self, reader, counted: dict) -> Iterator[pl.DataFrame]:
        """The batches of ``reader`` as frames of the columns shown, up to ``limit`` rows; the rows past
        it counted in ``counted["more"]``, not converted."""
        shown = 0
        for batch in reader:
            room = batch.num_rows if self.limit is None else max(self.limit - shown, 0)
            counted["more"] += batch.num_rows - min(room, batch.num_rows)
            if room <= 0:
                continue  # past --limit: counted, not rendered
            df = pl.from_arrow(batch.slice(0, room))
            shown += df.height
            yield df.select(self.columns) if self.columns else df


def _layout(
    fmt: str, cols: list[str], frames: Iterator[pl.DataFrame], width: int | None, window: int
) -> Iterator[str]:
    """The text of the rows in ``frames`` (each a batch of the columns ``cols``) as ``fmt``, in pieces
    that each end in a newline, a piece per batch: csv and json as ``_csv_piece``/``_json_piece``,
    markdown and vertical row by row, a table laid out from its first ``window`` rows (``QueryStream``)."""
    if fmt == "csv":
        yield _csv_piece(cols, [], header=True)
        yield from (_csv_piece(cols, df.rows()) for df in frames if df.height)
        return
    if fmt == "json":
        yield "["
        shown = 0
        for df in frames:
            if df.height:
                yield _json_piece(cols, df.rows(), first=not shown)
                shown += df.height
        yield "\n]\n" if shown else "]\n"
        return
    if fmt == "markdown":
        yield _md_line(cols) + "\n" + "|" + "|".join("---" for _ in cols) + "|\n"
        yield from ("".join(_md_line(_cells(r)) + "\n" for r in df.rows()) for df in frames if df.height)
        return
    if fmt == "table":
        first, held = [], 0
        for df in frames:  # the window the widths are laid out from
            first.append(df)
            held += df.height
            if held >= window:
                break
        if not held:
            yield "  ".join(cols) + "\n(no rows)\n"
            return
        numeric = [first[0].schema[c].is_numeric() for c in cols]
        cut = [[_table_cell(v) for v in r] for df in first for r in df.rows()]
        widths = [max(len(c), *(len(r[i]) for r in cut)) for i, c in enumerate(cols)]
        if not width or 2 * (len(cols) - 1) + sum(widths) <= width:
            yield from _table(cols, widths, numeric, cut, frames)
            return
        frames = iter([*first, *frames])  # wider than the terminal: one block per row
    yield from _vertical(cols, frames)


def _table(
    cols: list[str], widths: list[int], numeric: list[bool], first: list[list[str]], frames
) -> Iterator[str]:
    """A table's lines: its head, the ``first`` rows (cells already cut), each later batch of ``frames``,
    then the count of rows."""

    def line(values: list[str]) -> str:
        return "  ".join(
            (v.rjust(w) if num else v.ljust(w)) for v, w, num in zip(values, widths, numeric, strict=True)
        ).rstrip()

    yield "\n".join([line(cols), "  ".join("-" * w for w in widths), *(line(r) for r in first)]) + "\n"
    rows = len(first)
    for df in frames:
        if df.height:
            yield "".join(line([_table_cell(v) for v in r]) + "\n" for r in df.rows())
            rows += df.height
    yield _count(rows) + "\n"


def _vertical(cols: list[str], frames: Iterator[pl.DataFrame]) -> Iterator[str]:
    """One block per row (``column | value``), numbered on through the batches, then the count."""
    name_width, rows = max(len(c) for c in cols), 0
    for df in frames:
        lines = []
        for r in df.rows():
            rows += 1
            lines.append(f"-[ row {rows} ]" + "-" * 20)
            lines += [
                f"{c.ljust(name_width)} | {v.replace(chr(10), ' ⏎ ')}"
                for c, v in zip(cols, _cells(r), strict=True)
            ]
        if lines:
            yield "\n".join(lines) + "\n"
    yield (_count(rows) if rows else "(no rows)") + "\n"


def _count(rows: int) -> str:
    return f"({rows} row{'s' if rows != 1 else ''})"


def _cells(row: tuple) -> list[str]:
    return [_cell(v) for v in row]


def _table_cell(value: object) -> str:
    """A table's cell: on one line (a newline shown as ⏎), cut at 100 characters."""
    c = _cell(value).replace("\n", "⏎")
    return c if len(c) <= 100 else c[:99] + "…"


def _md_line(values: list[str]) -> str:
    """A Markdown table row; ``<img …>`` in a unit name renders as text, never as HTML."""

    def md(s: str) -> str:
        s = s.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")
        return s.replace("\n", "<br>")

    return "| " + " | ".join(md(c) for c in values) + " |"


def _csv_piece(cols: list[str], rows: list[tuple], header: bool = False) -> str:
    """CSV lines (each ending in a newline) of ``rows``, after the header line of ``cols`` when ``header``."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    if header:
        writer.writerow(cols)
    writer.writerows([_cell(v) for v in r] for r in rows)
    return buf.getvalue()


def _json_piece(cols: list[str], rows: list[tuple], first: bool) -> str:
    """``rows`` as items of a JSON list of objects, laid out as ``json.dumps(…, indent=1)`` lays out the
    whole list (each item on its own lines, indented one space), a comma before each item but the
    list's first: "[" + the pieces + "\\n]" is that list."""
    items = [
        json.dumps(dict(zip(cols, [format_value(v) for v in r], strict=True)), indent=1, ensure_ascii=False)
        for r in rows
    ]
    return ("" if first else ",") + ",".join("\n " + i.replace("\n", "\n ") for i in items)


def format_value(value: object) -> object:
    """A cell as a JSON-able value: datetimes ISO 8601 (UTC ``Z``), durations in seconds, lists and
    dicts element-wise, NaN as ``None``."""
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            value = value.astimezone(UTC).replace(tzinfo=None)
            return value.isoformat(timespec="microseconds") + "Z"
        return value.isoformat(timespec="microseconds")
    if isinstance(value, date | time):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, list | tuple):
        return [format_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): format_value(v) for k, v in value.items()}
    return value


def _cell(value: object) -> str:
    v = format_value(value)
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return f"{v:.3f}".rstrip("0").rstrip(".") if abs(v) < 1e15 else repr(v)
    if isinstance(v, list):
        return ",".join(_cell(x) for x in v)
    if isinstance(v, dict):
        return json.dumps(v, ensure_ascii=False)
    return str(v)


def format_frame(df: pl.DataFrame, fmt: str = "table") -> str:
    """Render rows as ``table``, ``vertical``, ``csv``, ``json`` or ``markdown`` text (see ``run_query``)."""
    if fmt not in FORMATS:
        raise ValueError(f"format {fmt!r}: expected one of {', '.join(FORMATS)}")
    return "".join(_layout(fmt, df.columns, iter([df]), None, max(df.height, 1)))[:-1]


def describe(saved: dict[str, SavedQuery] | None = None) -> str:
    """The text of ``logcorr query --list``: each saved query's name, question, parameters."""
    saved = load_saved() if saved is None else saved
    lines = []
    for q in saved.values():
        lines += [q.name, f"    {q.question or '(undocumented)'}"]
        if q.parameters:
            lines.append("    parameters: " + "; ".join(f"{p}: {t}" if t else p for p, t in q.parameters))
        via = uses(q, saved)
        inherited = sorted(set(all_parameters(q, saved)) - set(q.used_parameters))
        if via:
            lines.append(
                "    uses: "
                + ", ".join(via)
                + (f" (so also takes: {', '.join(inherited)})" if inherited else "")
            )
        lines.append("    columns: " + ", ".join(q.column_names))
    return "\n".join(lines)
