"""Text from log data made inert before it reaches a terminal or a Markdown file: a log line may
carry escape sequences that set a window title, write the clipboard (OSC 52), ring the bell, or
reorder what is shown (bidi overrides). Each such character is shown escaped (``\\x1b``, ``\\u202e``),
so the evidence stays readable and nothing acts on the terminal."""

from __future__ import annotations

import re
import textwrap

# C0 controls but tab and newline, DEL, C1 controls (U+0080-U+009F: CSI U+009B, OSC U+009D), and the
# invisible characters that reorder text (bidi embeddings, overrides, isolates and marks)
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escaped(m: re.Match) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean(text: str) -> str:
    """``text`` with every character of ``UNSAFE`` written as its escape (``\\x1b``, ``\\x07``,
    ``\\x9b``, ``\\u202e``); tab, newline and all other characters as they are. Never raises."""
    return UNSAFE.sub(_escaped, text)


def shown_name(name: str) -> str:
    """A file name (or any one-line value from the filesystem) as one line on a terminal: ``clean``, and
    newline, carriage return and tab shown as ``\\n``, ``\\r``, ``\\t``, so a name never forges a
    line of what a command prints (the ingest summary, its errors, ``show``). Never raises."""
    return clean(name).replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")


def json_inert(text: str) -> str:
    """JSON ``text`` (``json.dumps``' output) with every character of ``UNSAFE`` written as its JSON
    escape (``\\u009b``, ``\\u202e``): the same JSON value, inert on a terminal. ``json.dumps`` escapes
    C0 controls but with ``ensure_ascii=False`` leaves C1 controls (U+009B is CSI) and bidi overrides
    raw; such characters can only stand inside a JSON string, where the escape means the same."""
    return UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


_UNESCAPE = re.compile(r"\\([\\`*\[\]_|!])")


def for_terminal(text: str, width: int) -> str:
    """Markdown ``text`` with its prose lines wrapped at ``width`` columns (a list item's lines under its
    text; tables and code left whole), for reading in a terminal: outside code, the escapes that kept
    data inert in Markdown (``markdown.md``: ``\\[``, ``\\_``, ``&lt;``, ``&amp;``) shown as the characters they
    stand for (a terminal renders no Markdown)."""
    out, fenced = [], False
    for raw in text.splitlines():
        fenced ^= raw.startswith("```")
        line = raw
        if not fenced and not raw.startswith(("```", "|")):  # a table keeps its cells' escaped "|"
            line = _UNESCAPE.sub(r"\1", raw).replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
        if fenced or len(line) <= width or line.startswith("|"):
            out.append(line)
            continue
        lead = len(re.match(r"\s*(?:(?:[-*]|\d+\.)\s+)?", line).group())  # a list item's marker
        out.append(textwrap.fill(line, width, subsequent_indent=" " * lead, break_on_hyphens=False))
    return "\n".join(out) + "\n"
