"""Markdown from data, in one place: ``md()`` turns a value read from the data (a log line, a host or
unit name, a finding's summary) into inert Markdown, so that ``<img src=…>``, ``![t](http://…)`` or
``[x](javascript:…)`` written in a log renders as the text it is, never as HTML, an image or a link.
Every line of the report, its summary and verdict, and the issue draft puts data through it.
"""

from __future__ import annotations

import re

# Outside code, escaped with a backslash: these; "!" before "[" (an image); "_" but between two letters
# or digits (there it starts no emphasis: snake_case stays as it is); "|" in a table cell. "&", "<" and
# ">" become entities (an entity written in the data, ``&lt;``, renders as itself).
_ESCAPED = re.compile(r"[\\`*\[\]_|]|!(?=\[)")


def _escape(m: re.Match, cell: bool) -> str:
    s, i, ch = m.string, m.start(), m.group()
    if ch == "_" and 0 < i < len(s) - 1 and s[i - 1].isalnum() and s[i + 1].isalnum():
        return ch
    return ch if ch == "|" and not cell else "\\" + ch


def md(value: object, *, code: bool = False, width: int | None = None, cell: bool = False) -> str:
    """``value`` (any data; ``None`` is empty) as inert Markdown.

    Args:
        value: the text, or any value (``str()`` of it).
        code: as code: a code span (a fence of one more backtick than the longest run the value
            holds), or a fenced ``text`` block when the value holds a line break. Inside code the
            value is shown as it is: nothing is escaped. Not for a table cell.
        width: at most this many characters (outside code), the rest cut and "…" added.
        cell: for a table cell: ``|`` escaped too.

    Returns:
        Outside code: one line (line breaks as spaces) with ``\\ ` * [ ]``, ``!`` before ``[`` and
        ``_`` outside a word escaped by a backslash and ``&``/``<``/``>`` as ``&amp;``/``&lt;``/``&gt;``, so it renders
        as the text it is.

    Example:
        ``md("<img src=x> ![t](u)")`` is ``&lt;img src=x&gt; \\!\\[t\\](u)``; ``md("a`b", code=True)``
        is ``\\`\\`a`b\\`\\```.
    """
    if value is None:
        return ""
    text = str(value)
    if code:
        fence = "`" * (max((len(r) for r in re.findall("`+", text)), default=0) + 1)
        if "\n" in text or "\r" in text:
            fence = fence if len(fence) >= 3 else "```"
            return f"{fence}text\n{text.rstrip()}\n{fence}"
        if not text:
            return ""
        pad = " " if text[0] in "` " or text[-1] in "` " else ""
        return f"{fence}{pad}{text}{pad}{fence}"
    text = " ".join(text.splitlines())
    if width is not None and len(text) > width:
        text = text[: width - 1] + "…"
    text = _ESCAPED.sub(lambda m: _escape(m, cell), text)
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
