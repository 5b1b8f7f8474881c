"""What a draft made to be pasted upstream must not carry: host names (and IPv4 addresses), directories,
internal URLs' hosts and the model path, each replaced by a stable placeholder (``host-1``,
``<path>/conn.py``, ``model-1``), the same one wherever the same value appears.

``Redactor(hosts, models)`` is a callable on text; ``redact_rows`` applies it to every string cell of
a table of rows. Paths keep their file name, and a Python file its package path after
``site-packages/`` (``<path>/sglang/srt/…/conn.py``), which an upstream reader needs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import polars as pl

# URL hosts that are public: kept as they are (their own subdomains too).
PUBLIC_HOSTS = (
    "github.com",
    "githubusercontent.com",
    "pypi.org",
    "pytorch.org",
    "huggingface.co",
    "sglang.ai",
)
URL = re.compile(
    r"\b(https?://)(?:[^\s/@]+@)?([^\s/:?#\"'<>()\[\]]+)(:\d+)?([^\s?#\"'<>()\[\]]*)([?#][^\s\"'<>()\[\]]*)?"
)
# An absolute path of two or more parts (not "/health", not a URL's path after its host)
PATH = re.compile(r"(?<![\w.:/~-])/(?:[\w.+@%~-]+/)+[\w.+@%~-]*")
# Where a Python file's package path begins: what follows is kept
PACKAGE_ROOT = re.compile(r".*/(?:site-packages|dist-packages|python\d+(?:\.\d+)?)/")
IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w.])")


class Redactor:
    """Text with the data's host names (``hosts``, then each IPv4 address met) as ``host-N``, its
    model paths (``models``) as ``model-N``, directories as ``<path>`` and the hosts of URLs that are
    not public (``PUBLIC_HOSTS``) as their ``host-N`` (a query string as ``?<query>``)."""

    def __init__(self, hosts: Iterable[str], models: Iterable[str]) -> None:
        self.hosts = {h: f"host-{i}" for i, h in enumerate(sorted({h for h in hosts if h}), 1)}
        self.models = {m: f"model-{i}" for i, m in enumerate(sorted({m for m in models if m}), 1)}
        names = sorted(self.hosts, key=len, reverse=True)
        self._names = (
            re.compile("|".join(rf"(?<![\w.-]){re.escape(h)}(?![\w-])" for h in names)) if names else None
        )

    def host(self, name: str) -> str:
        """The placeholder of a host name or address (a new one for a name not seen before)."""
        return self.hosts.setdefault(name, f"host-{len(self.hosts) + 1}")

    def _url(self, m: re.Match) -> str:
        scheme, host, port, path, query = m.groups()
        if any(host == p or host.endswith("." + p) for p in PUBLIC_HOSTS):
            return m.group()
        return f"{scheme}{self.host(host)}{port or ''}{path}{'?<query>' if query else ''}"

    @staticmethod
    def _path(m: re.Match) -> str:
        path = m.group()
        root = PACKAGE_ROOT.match(path)
        return "<path>/" + (path[root.end() :] if root else path.rsplit("/", 1)[1])

    def __call__(self, text: str | None) -> str | None:
        """``text`` redacted; ``None`` stays ``None``."""
        if not text:
            return text
        for model in sorted(self.models, key=len, reverse=True):
            text = text.replace(model, self.models[model])
        text = URL.sub(self._url, text)
        text = PATH.sub(self._path, text)
        if self._names is not None:
            text = self._names.sub(lambda m: self.hosts[m.group()], text)
        return IPV4.sub(lambda m: self.host(m.group()), text)


def redact_rows(df: pl.DataFrame, redact: Redactor) -> pl.DataFrame:
    """``df`` with every string cell, and every string of a list cell, passed through ``redact``."""
    cols = []
    for name, dtype in df.schema.items():
        if dtype == pl.String:
            cols.append(pl.Series(name, [redact(v) for v in df[name].to_list()], pl.String))
        elif dtype == pl.List(pl.String):
            values = [None if v is None else [redact(x) for x in v] for v in df[name].to_list()]
            cols.append(pl.Series(name, values, dtype))
    return df.with_columns(cols) if cols else df
