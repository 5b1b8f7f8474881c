"""The two shapes a line format takes as data (lnav style), for every family of lines: ``LinePattern``
(a kind of record) and ``FieldRule`` (a field found beside its pattern). The tables of them live in
``parsers/sglang_lines.py``, ``parsers/sglang_fields.py`` and ``parsers/router.py``; this module
imports nothing of ours, so each of those can use both."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class LinePattern:
    """One named line format.

    ``anchor`` is a literal every matching record contains; ``regex`` (Rust regex syntax) confirms the
    match, searched anywhere in the record unless it starts with ``^``. Its named groups are columns of
    the table its kind fills, typed by the table contract (``fields.extract_fields``; a group
    ``<name>_ms`` (``<name>_ns``) fills ``<name>_s`` in seconds; a name starting with ``_`` is a part its builder
    combines). ``subkind`` is the ``error_kind``/``abort_kind``/watchdog kind; ``role`` the engine
    role the line implies (issue item 8), or None; ``yields`` the columns the sample's row must hold
    (checked by ``tests/test_sglang_parsers.py``).
    """

    name: str
    kind: str
    anchor: str
    regex: str
    since: str
    sample: str
    role: str | None = None
    subkind: str | None = None
    yields: dict = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True)
class FieldRule:
    """A field a family of lines prints in any of its patterns: ``regex``'s named groups are columns of the
    family's table (as in ``LinePattern``), searched in ``scope`` of each record (``body``, one of
    ``fields.SCOPES``, or a column ``_<scope>`` its parser added: the router's ``spans`` and ``message``).
    Rules are tried in table order, the first non-null value of a column wins (``nonempty``: an empty
    capture counts as none). ``sample`` is a text of that scope (a whole record for the scopes of a
    ``Finish`` line) and ``yields`` what it must give."""

    name: str
    regex: str
    scope: str
    since: str
    sample: str
    yields: dict
    nonempty: bool = False
