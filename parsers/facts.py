"""Facts a component states about itself (the ``facts`` table): the figures and settings its own
informational records print in a ``key=value``, ``key: value``, ``N <things>`` or ``<name> <value>``
clause, whatever the component (SGLang's start-up lines, vLLM's, NIXL's, UCX's, Mooncake's, Dynamo's).

The rule is the shape of such lines, not their words. A record is read when a logger's header was read
on it (``header``: prose, shell prompts and tool output carry none), its level is informational (none
printed, INFO, DEBUG, TRACE, NOTICE; none printed only when the line has no words of failure: failed,
error, exception, fatal, timeout, abort) and no other table types it (kind ``other``; SGLang's
``server_args=ServerArgs(…)`` line is the ``config`` table's, read whole). Its first line, with a
level printed as ``LEVEL:`` (uvicorn's), a tracing target (``arbiter.start: …``) and parenthesised
asides (``(set X=1 to enable)``) taken off, is cut into clauses at ``, ``, ``; ``, `` | `` and a
sentence's ``. ``; each clause is one of

- ``key: value`` (the value after the last ``": "`` of the clause, the key the words before it, the
  words before an earlier ``": "`` its statement): ``#tokens: 10240``, ``Time elapsed: 9.40 s``,
  ``NIXL handshake: get metadata took: 0.0024`` (statement ``NIXL handshake``); a value that is itself
  ``K=V`` gives ``K`` with the words before as its statement (``Modified UCX config: RNDV_THRESH=inf``);
- ``key=value`` (a key of up to three words, a value of one token and its unit, the clause's end):
  ``dtype=torch.bfloat16``, ``avail mem=24.71 GB`` (``Set X=1 before …`` is advice, no fact);
- ``N <things>`` (a count and up to three words that are no unit): ``Found 8 HCAs``;
- ``<name> <integer>`` pairs, three or more in a row anywhere in the clause (NCCL's ``rank 13 nranks 16
  cudaDev 5 nvmlDev 5``), when the clause is none of the above and the others: each pair;
- ``<name> <value>`` at the clause's end, the value a number, a version, an address or URL, or a UUID:
  ``Starting master on pid 3954``, ``listening on 127.0.0.1:15317`` (a preposition joins the word
  before it; a word that joins, ``and``, names nothing), ``from remote engine d8db2325-…``.

A key or value with a bracket opened and not closed (cut out of a repr or a list) states nothing.

A clause that states none of them is a statement: the record's opening one (``Load weight end``,
``KV Cache is allocated``) names what the facts after it are about. Facts are data only: no finding
reads them, so none is ever a failure or the main event.
"""

from __future__ import annotations

import re

import polars as pl

from logcorr.parsers.batch_lines import first_line
from logcorr.parsers.fields import base_columns
from logcorr.parsers.prefix import LEVEL_WORD
from logcorr.parsers.server_args import MARKER as SERVER_ARGS
from logcorr.store.schema import FACTS, conform

# Levels of records that inform; a warning or an error is the findings' business.
INFORMATIONAL = ("INFO", "DEBUG", "TRACE", "NOTICE")
# Header families whose format prints a tracing target (and spans) before the message: Rust tracing's
# fmt (sgl-router, Dynamo) ``target: message``.
TARGET_HEADERS = ("router",)
# uvicorn's format keeps its level in the body (``INFO:     Uvicorn running on …``): a header's, no key
_LEVEL = re.compile(rf"^(?:{LEVEL_WORD}):\s+")
_TARGET = re.compile(r"^(?:[^\s:{]+(?:::[^\s:{]+|:\d+)*(?:\{[^}]*\})?: )+")
_ASIDE = re.compile(r"\s*\([^()]*\)")
_CLAUSES = re.compile(r"\s*(?:[,;]|\.(?=\s))\s+|\s+\|\s+")
_KEY = re.compile(r"[A-Za-z_#][\w.#/-]*(?: [\w.#/()-]+){0,5}")
_KV_VALUE = re.compile(r"([A-Za-z_#][\w.#-]*)=(\S+)")
UNITS = r"(?:[KMGTP]i?B|B|bytes?|s|ms|us|µs|ns|sec|secs|seconds?|min|minutes?|h|hours?|%|[\w]+/s)"
_EQ = re.compile(rf"([A-Za-z_#][\w.#-]*(?: [A-Za-z_][\w-]*){{0,2}})=(\S+(?: {UNITS})?)")
_NUMBER = re.compile(rf"([-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)(?:\s*({UNITS}|[A-Za-z%][\w/%]*))?")
_COUNT = re.compile(r"(?:(.*?)\s+)?(\d+) ([A-Za-z][\w/-]*(?: [A-Za-z][\w/-]*){0,2})")
_UNIT_WORD = re.compile(rf"{UNITS}(?: .*)?")
_VALUE_TOKEN = (
    rf"v?\d+(?:\.\d+)*(?:\.post\d+|rc\d+)?(?: ?{UNITS})?"
    + r"|[\w.-]+:\d{2,5}|\w+://\S+"
    + r"|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)
_NAMED = re.compile(rf"(?:(.*?)\s+)?([A-Za-z][\w-]*)\s+({_VALUE_TOKEN})")
# a run of three or more ``<name> <integer>`` pairs in one clause (NCCL's communicator line: ``ncclCommInitRank
# comm 0x… rank 13 nranks 16 cudaDev 5 nvmlDev 5 busId b1000 …``, batch14/10): each pair a fact, the words
# before the run its statement; the run ends at the first value that is no integer or at an id (busId: hex)
_PAIR_RUN = re.compile(r"(?:^|(?<=\s))((?:[A-Za-z][A-Za-z_]* \d+ ){2,}[A-Za-z][A-Za-z_]* \d+)(?=\s|$)")
_PAIR = re.compile(r"([A-Za-z][A-Za-z_]*) (\d+)")
_PREPOSITIONS = {"on", "at", "to", "from", "for", "in", "of", "with", "by", "via"}
# words that join or qualify and name nothing: "took 6.3 GiB and 1.2 seconds" has no fact named "and"
_FUNCTION_WORDS = {"and", "or", "but", "than", "as", "is", "are", "was", "were", "be", "the", "a", "an"}
# words of failure in a record whose logger printed no level (the unexplained finding's grade 5): such a
# record is the findings' business, never a source of facts
_FAILURE_WORDS = r"(?i)\b(?:fail(?:ed|s|ure)?|errors?|exception|fatal|timed out|timeout|abort(?:ed)?)\b"
_MAX_LINE = 1000


def _key_ok(key: str) -> bool:
    return len(key) <= 64 and _KEY.fullmatch(key) is not None and _balanced(key)


def _balanced(text: str) -> bool:
    """No bracket opened and not closed (or the other way): a clause cut out of a repr or a list
    (``ServerArgs(a=1``, ``[1``) is no fact of its own."""
    return all(text.count(o) == text.count(c) for o, c in ("()", "[]", "{}"))


def clause_facts(clause: str) -> list[tuple[str | None, str, str]]:
    """The facts of one clause as ``(statement, key, value)``: ``[]`` when it states none. Never raises."""
    c = clause.strip().rstrip(".").strip()
    if not c or not _balanced(c):
        return []
    if ": " in c:
        head, _, value = c.rpartition(": ")
        before, _, key = head.rpartition(": ")
        key, value = key.strip(), value.strip()
        if not value:
            return []
        if m := _KV_VALUE.fullmatch(value):
            return [(head.strip() or None, m.group(1), m.group(2))]
        return [(before.strip() or None, key, value)] if _key_ok(key) and _balanced(value) else []
    if c.endswith(":"):  # ``key:`` and nothing: no value printed
        return []
    if "=" in c:
        m = _EQ.fullmatch(c)
        return [(None, m.group(1), m.group(2).strip())] if m else []
    if (m := _COUNT.fullmatch(c)) and not _UNIT_WORD.fullmatch(m.group(3)):
        return [(m.group(1) or None, m.group(3), m.group(2))]
    if m := _NAMED.fullmatch(c):
        before, word, value = m.group(1), m.group(2), m.group(3)
        if word.lower() in _FUNCTION_WORDS:
            return []
        if word.lower() in _PREPOSITIONS:
            if not before:
                return []
            head, _, last = before.rpartition(" ")
            before, word = head or None, f"{last} {word}"
        return [(before, word, value)]
    if m := _PAIR_RUN.search(c):
        before = c[: m.start(1)].strip() or None
        pairs = _PAIR.findall(m.group(1))
        ids = [
            i for i, (k, _) in enumerate(pairs) if k.lower().endswith("id")
        ]  # an id (busId 69020: hex) is no count
        return [(before, k, v) for k, v in pairs[: ids[0] if ids else None]]
    return []


def line_facts(line: str, header: str | None = None) -> list[tuple[str | None, str, str]]:
    """The facts of one record's first line (its header off) as ``(statement, key, value)`` in order;
    ``header`` is its header family (``parsers.prefix``): a tracing format's target is taken off."""
    s = _LEVEL.sub("", line[:_MAX_LINE], count=1)
    if header in TARGET_HEADERS:
        s = _TARGET.sub("", s, count=1)
    s = _ASIDE.sub("", s)
    out: list[tuple[str | None, str, str]] = []
    opening: str | None = None
    for n, clause in enumerate(_CLAUSES.split(s)):
        found = clause_facts(clause)
        if not found and n == 0:
            opening = clause.strip().rstrip(".").strip() or None
        out += [(st or opening, k, v) for st, k, v in found]
    return out


def number_and_unit(value: str) -> tuple[float | None, str | None]:
    """A value that is a number, alone or with a unit word: ``"24.71 GB"`` → ``(24.71, "GB")``,
    ``"0.0%"`` → ``(0.0, "%")``, ``"10240"`` → ``(10240.0, None)``; anything else ``(None, None)``."""
    m = _NUMBER.fullmatch(value.strip())
    if not m:
        return None, None
    return float(m.group(1)), m.group(2)


def facts(ev: pl.DataFrame) -> pl.DataFrame:
    """One ``facts`` row per fact stated by the informational records of ``ev`` (the enriched events of
    a chunk: ``events`` columns plus ``header`` and ``body``); see the module's docstring for the rule.

    Returns ``FACTS`` columns: provenance (``event_id, ts, host, role, pid``, ranks, ``level``,
    ``source``, ``source_pos``), ``format`` (the header family the record was read with), ``statement``,
    ``key``, ``value`` (as printed), ``number`` (Float64: the value when it is a number, with or
    without a unit) and ``value_unit`` (the unit printed after it). Never raises on any text."""
    if ev.height == 0 or "header" not in ev.columns:
        return pl.DataFrame(schema=FACTS.schema)
    if "kind" in ev.columns:  # (first: the other rows' text is never read)
        ev = ev.filter((pl.col("kind") == "other") & pl.col("header").is_not_null())
    base = base_columns(ev)
    level = pl.col("level")
    first = pl.col("body").str.replace(r"(?s)\n.*$", "")
    keep = pl.col("header").is_not_null() & (
        level.is_in(INFORMATIONAL) | (level.is_null() & ~first.str.contains(_FAILURE_WORDS))
    )
    base = base.filter(keep.fill_null(False))
    if base.height == 0:
        return pl.DataFrame(schema=FACTS.schema)
    body = first_line(base["body"])
    # the server_args line is the config table's, read whole
    maybe = (body.str.contains(r"[:=] ?\S|\d") & ~body.str.contains(SERVER_ARGS, literal=True)).fill_null(
        False
    )
    base, body = base.filter(maybe), body.filter(maybe)
    rows: list[tuple] = []
    for i, (text, header) in enumerate(zip(body.to_list(), base["header"].to_list(), strict=True)):
        for statement, key, value in line_facts(text or "", header):
            number, unit = number_and_unit(value)
            rows.append((i, header, statement, key, value, number, unit))
    if not rows:
        return pl.DataFrame(schema=FACTS.schema)
    found = pl.DataFrame(
        rows,
        schema={
            "_i": pl.UInt32,
            "format": pl.String,
            "statement": pl.String,
            "key": pl.String,
            "value": pl.String,
            "number": pl.Float64,
            "value_unit": pl.String,
        },
        orient="row",
    )
    df = base.with_row_index("_i").join(found, on="_i", how="inner", maintain_order="right")
    return conform(df, FACTS, strict=False)
