"""Where the shipped SQL lives: the saved queries (``queries/*.sql``) and the known-issue families
(``queries/known_issues/*.sql``). Both ``saved`` and ``known_issues`` read from here."""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def shipped_queries():
    """Where the shipped ``.sql`` files are: the ``queries/`` folder of the source checkout this package
    sits in (so the code and the queries always come from the same tree, whatever is installed), else the
    installed ``logcorr.queries`` package data. Returns a ``Path`` or an importlib ``Traversable``."""
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "queries" / "__init__.py").is_file() and (checkout / "pyproject.toml").is_file():
        return checkout / "queries"
    return resources.files("logcorr.queries")


def shipped_families() -> Path:
    """``queries/known_issues``, beside the queries ``shipped_queries`` finds."""
    return Path(str(shipped_queries())) / "known_issues"
