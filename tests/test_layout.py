"""The package's layout as the design states it (issue 48, item 3): no import circle among logcorr's
modules, each stage imports only the stages below it, and no module reaches for another's private name.

The import graph is read from the source with ``ast``: every ``import`` and ``from … import`` of a
logcorr module counts, at module level or inside a function alike (an import put inside a function to
dodge a circle is the circle still), ``if TYPE_CHECKING:`` imports too. ``parsers/`` is shipped as
``logcorr.parsers`` (pyproject.toml), so its files are named so here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"logcorr": ROOT / "logcorr", "logcorr.parsers": ROOT / "parsers"}

# Which stage may import which: the design's one-way flow (docs/design.md, "Data flow"), as data.
# ``contract`` is store/schema.py, the table contract every stage imports; ``base`` the small helpers
# of the package root every stage may use (interrupts, scratch, markdown, clocks, roles; the root's
# ``__init__`` for the version); ``top`` the commands and the ingest plan, which import anything.
STAGE_OF = {
    "logcorr.store.schema": "contract",
    "logcorr.parsers": "parsers",
    "logcorr.inputs": "inputs",
    "logcorr.store": "store",
    "logcorr.analysis": "analysis",
    "logcorr.render": "render",
    "logcorr.cli": "top",
    "logcorr.entry": "top",
    "logcorr.ingest": "top",
    "logcorr.collect": "top",
    "logcorr.combine": "top",
    "logcorr.console": "top",
    "logcorr.pipeline": "top",  # the ingest plan's stages (read, enrich, finish), split out of ingest.py
    "logcorr": "base",
}
MAY_IMPORT = {
    "contract": set(),
    "base": {"contract", "parsers"},  # clocks reads parsers.prefix's stamps, roles parsers.roles' rules
    "parsers": {"contract"},
    "inputs": {"contract", "base", "parsers"},  # a reader recognises the line formats parsers define
    "store": {"contract", "base", "parsers"},  # config reads parsers.server_args' fields
    "analysis": {"contract", "base", "parsers", "store"},
    "render": {"contract", "base", "parsers", "store", "analysis"},
    "top": {"contract", "base", "parsers", "inputs", "store", "analysis", "render"},
}


def stage(module: str) -> str:
    """The stage of a logcorr module: the longest prefix of it that ``STAGE_OF`` names."""
    parts = module.split(".")
    return next(STAGE_OF[p] for i in range(len(parts), 0, -1) if (p := ".".join(parts[:i])) in STAGE_OF)


def modules() -> dict[str, tuple[Path, bool]]:
    """``{module name: (file, is a package's __init__)}`` for every logcorr module."""
    found = {}
    for package, folder in PACKAGES.items():
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            init = parts[-1] == "__init__"
            found[".".join([package, *parts[: -1 if init else None]])] = (path, init)
    return found


MODULES = modules()


def imports(module: str) -> list[tuple[str, str | None, str, int]]:
    """``(imported logcorr module, name imported from it or None, local name, line)`` for every import
    in ``module``, wherever it stands; ``from pkg import mod`` imports the module ``pkg.mod``."""
    path, init = MODULES[module]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            # ``import logcorr.x`` binds ``logcorr``; ``import logcorr.x as y`` binds ``y`` to ``logcorr.x``
            found += [
                (a.name, None, a.asname or a.name.split(".")[0], node.lineno)
                for a in node.names
                if a.name in MODULES
            ]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                here = module.split(".")[: None if init else -1]
                here = here[: len(here) - node.level + 1]
                base = ".".join(here + ([base] if base else []))
            for a in node.names:
                if f"{base}.{a.name}" in MODULES:
                    found.append((f"{base}.{a.name}", None, a.asname or a.name, node.lineno))
                elif base in MODULES:
                    found.append((base, a.name, a.asname or a.name, node.lineno))
    return found


GRAPH = {m: {target for target, *_ in imports(m) if target != m} for m in MODULES}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_graph_is_read():
    # the reader sees module-level, relative and function-level imports alike
    assert "logcorr.inputs.source" in GRAPH["logcorr.inputs.text"]
    assert "logcorr.store.schema" in GRAPH["logcorr.parsers.sglang"]
    assert "logcorr.cli" in GRAPH["logcorr.entry"]  # `from logcorr.cli import app` inside main()
    assert stage("logcorr.store.schema") == "contract" and stage("logcorr.store.output") == "store"
    assert stage("logcorr.render.timeline.page") == "render" and stage("logcorr.clocks") == "base"


def test_a_lazy_import_is_an_edge(tmp_path, monkeypatch):
    # what the old exports.newest_first did to dodge the circle through containers: still an edge
    path = tmp_path / "exports.py"
    path.write_text("def newest_first():\n    from logcorr.inputs.containers import parse_lines\n")
    monkeypatch.setitem(MODULES, "logcorr.inputs.exports", (path, False))
    assert imports("logcorr.inputs.exports") == [
        ("logcorr.inputs.containers", "parse_lines", "parse_lines", 2)
    ]


def test_cycles_are_found():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]


def test_no_import_circle():
    assert cycles(GRAPH) == []


def test_each_stage_imports_only_the_stages_below_it():
    wrong = [
        f"{m} ({stage(m)}) imports {t} ({stage(t)})"
        for m in sorted(GRAPH)
        for t in sorted(GRAPH[m])
        if stage(t) != stage(m) and stage(t) not in MAY_IMPORT[stage(m)]
    ]
    assert wrong == []


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_uses(module: str) -> list[str]:
    """Private names (one leading underscore) ``module`` takes from another logcorr module: imported
    by name, or read as an attribute of a module it imported (``text._helper``)."""
    path, _ = MODULES[module]
    bound = imports(module)
    found = [
        f"{module}:{line} imports {name} from {target}"
        for target, name, _, line in bound
        if name and _private(name) and target != module
    ]
    aliases = {
        local: local if target.startswith(local + ".") else target
        for target, name, local, _ in bound
        if name is None
    }
    reads = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            base, dotted = node.value, []
            while isinstance(base, ast.Attribute):
                dotted.append(base.attr)
                base = base.value
            if isinstance(base, ast.Name) and base.id in aliases:
                target = ".".join([aliases[base.id], *reversed(dotted)])
                if target in MODULES and target != module:
                    reads.append((node.lineno, f"{module}:{node.lineno} reads {target}.{node.attr}"))
    return found + [text for _, text in sorted(reads)]


def test_private_uses_are_found(tmp_path, monkeypatch):
    assert _private("_GLUED_NATIVE") and not _private("__version__") and not _private("GLUED")
    module = "logcorr.inputs.text"
    source = (
        "from logcorr.inputs import source\nfrom logcorr.inputs.source import _x\nsource._y()\n"
        "import logcorr.inputs.sniff\nlogcorr.inputs.sniff._z\nsource.SourceReport._own\n"
    )
    path = tmp_path / "text.py"
    path.write_text(source)
    monkeypatch.setitem(MODULES, module, (path, False))
    assert private_uses(module) == [
        "logcorr.inputs.text:2 imports _x from logcorr.inputs.source",
        "logcorr.inputs.text:3 reads logcorr.inputs.source._y",
        "logcorr.inputs.text:5 reads logcorr.inputs.sniff._z",
    ]


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_private_name_crosses_a_module_border(module):
    assert private_uses(module) == []
