"""docs/ is the reference and README.md the front door (issue 26): every command, option, table and
saved query is documented in docs/, the generated sections are what the CLI prints, and every page
and repository path the docs name exists (as sqlite-utils keeps its docs honest)."""

from __future__ import annotations

import re
import shlex
import tomllib

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from logcorr.analysis import saved
from logcorr.cli import app
from logcorr.store import schema
from tests.conftest import ROOT

DOCS = ROOT / "docs"
CLI = get_command(app)
GENERATED = re.compile(r"<!-- (\w+):begin -->\n.*?<!-- \1:end -->", re.S)


def page(name: str) -> str:
    return (DOCS / name).read_text()


def prose() -> str:
    """Every page of docs/ without its generated sections: what a person wrote."""
    return "\n".join(GENERATED.sub("", p.read_text()) for p in sorted(DOCS.glob("*.md")))


def generated(text: str, name: str) -> str:
    section = re.search(rf"<!-- {name}:begin -->\n(.*?)<!-- {name}:end -->", text, re.S)
    assert section, f"no <!-- {name}:begin --> … <!-- {name}:end --> section"
    return section.group(1)


def cli_sections() -> dict[str, str]:
    """docs/cli.md cut at its ``## logcorr NAME`` headings: command name -> its section."""
    parts = re.split(r"(?m)^## logcorr (\S+)\n", page("cli.md"))
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def mentions(text: str, token: str) -> bool:
    """``token`` (an option such as ``-d`` or ``--since``) appears as a whole word in ``text``."""
    return re.search(rf"(?<![\w-]){re.escape(token)}(?![\w-])", text) is not None


def test_docs_tables_md_is_what_logcorr_tables_prints():
    printed = CliRunner().invoke(app, ["tables"])
    assert printed.exit_code == 0
    section = generated(page("tables.md"), "tables")
    assert section.strip() == re.sub(r"(?m)^## ", "### ", printed.output).strip(), (
        "docs/tables.md differs from `logcorr tables`: paste `logcorr tables | sed 's/^## /### /'` between the markers"
    )
    headings = re.findall(r"(?m)^### (\w+)$", section)
    assert headings == list(schema.TABLES)


def test_docs_queries_md_is_what_query_list_prints(monkeypatch):
    monkeypatch.delenv("LOGCORR_KNOWN_ISSUES", raising=False)  # the shipped queries only
    printed = CliRunner().invoke(app, ["query", "--list"])
    assert printed.exit_code == 0
    block = re.fullmatch(r"```text\n(.*)\n```\n", generated(page("queries.md"), "queries"), re.S)
    assert block, "docs/queries.md: the queries section holds one ```text block"
    assert block.group(1) == printed.output.rstrip("\n"), (
        "docs/queries.md differs from `logcorr query --list`: paste its output between the markers"
    )


def test_cli_md_has_a_section_per_command_and_no_other():
    assert sorted(cli_sections()) == sorted(CLI.commands)


@pytest.mark.parametrize("name", sorted(CLI.commands))
def test_every_option_of_a_command_has_a_row_in_its_cli_md_section(name):
    rows = "\n".join(line for line in cli_sections()[name].splitlines() if line.startswith("| `"))
    options = [p for p in CLI.commands[name].params if p.param_type_name == "option"]
    assert options or name == "tables"
    missing = [o for p in options for o in (*p.opts, *p.secondary_opts) if not mentions(rows, o)]
    assert not missing, f"docs/cli.md, logcorr {name}: {', '.join(missing)} not documented"


def test_the_top_level_options_are_in_cli_md():
    for p in CLI.params:
        for opt in p.opts:
            assert mentions(page("cli.md"), opt), opt


def test_every_table_of_the_contract_is_named_in_docs_prose():
    text = prose()
    missing = [t for t in schema.TABLES if f"`{t}`" not in text]
    assert not missing, f"tables not mentioned in docs/ outside the generated sections: {missing}"


def test_every_saved_query_and_bug_family_is_named_in_docs_prose():
    text = prose()
    names = [p.stem for p in (ROOT / "queries").glob("*.sql")] + list(saved.load_saved())
    missing = sorted({n for n in names if f"`{n}`" not in text})
    assert not missing, f"saved queries not mentioned in docs/ outside the generated sections: {missing}"
    families = sorted(p.name for p in (ROOT / "queries" / "known_issues").glob("*.sql"))
    assert families and all(f"`{f}`" in page("known_issues.md") for f in families)


def test_every_page_and_path_the_docs_name_exists():
    texts = {p.relative_to(ROOT): p.read_text() for p in [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]}
    for where, text in texts.items():
        for link in re.findall(r"\]\(([^)#:]+)\)", text):  # relative Markdown links
            assert (ROOT / where.parent / link).exists(), f"{where}: link to {link}, which does not exist"
        for path in re.findall(r"`((?:logcorr|parsers|queries|bench|tests|sample_logs|docs)/[\w./]*)`", text):
            if "NAME" not in path:
                assert (ROOT / path).exists(), f"{where}: `{path}` does not exist"


def test_the_readme_is_a_front_door_that_points_at_every_page():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 250
    for p in DOCS.glob("*.md"):
        assert f"(docs/{p.name})" in readme, f"README.md does not point at docs/{p.name}"


def test_the_readme_test_command_is_the_one_ci_runs():
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
    readme = (ROOT / "README.md").read_text()
    command = re.search(r"Run the tests.*?\n```sh\n(.*?)\n```", readme, re.S).group(1)
    assert command == ci.replace("pip install -q ", "pip install ")


def test_ci_runs_the_readme_test_command_and_both_run_the_heavy_tests():
    """.ci/run runs the README's test command (its pip quiet), and that command runs the tests the
    default leaves out (``-m heavy``): the marker hides no test from CI."""
    readme = (ROOT / "README.md").read_text()
    command = re.search(r"what `\.ci/run` runs.*?```sh\n(.*?)\n```", readme, re.S).group(1)
    ci = (ROOT / ".ci" / "run").read_text().rstrip("\n").splitlines()[-1]
    assert ci.replace("pip install -q ", "pip install ") == command
    runs = [part.strip() for part in command.split("&&") if "pytest" in part]
    assert runs == ["python -m pytest -q -n auto", "python -m pytest -q -n auto -m heavy"]
    addopts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["addopts"]
    args = shlex.split(addopts)  # one marker expression, the one that leaves out the heavy tests
    assert [args[i + 1] for i, a in enumerate(args) if a == "-m"] == ["not heavy"]
