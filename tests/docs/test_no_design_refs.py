"""The repository owns its design: nothing cites the external design brief (users do not
have it) — not the docs, examples or README, not a command's help, not a string, docstring
or comment of the code, tests or benchmarks — and every citation of a design page
(``docs/<page>.md#<section>``) names a page and a section that exist."""

from __future__ import annotations

import ast
import re

import pytest
import typer
from typer.testing import CliRunner

from eree.cli import app
from tests.docs.blocks import REPO


def _docs() -> list:
    return [
        REPO / "README.md",
        *sorted((REPO / "docs").rglob("*.md")),
        *sorted((REPO / "docs").rglob("*.json")),
        # the shipped example specs (not data a README command wrote into examples/)
        *sorted(p for p in (REPO / "examples").glob("*") if p.is_file()),
    ]


#: the brief's file name, spelled so that this file does not contain it
BRIEF = "DES" + "IGN"


def _text_files() -> list:
    """Every text file of the repository's code, tests, benchmarks, docs and examples."""
    files = [REPO / "README.md", REPO / "BENCHMARKS.md", REPO / "pyproject.toml"]
    for top in ("src", "tests", "benchmarks", "docs", "examples", ".ci"):
        files += [
            p
            for p in sorted((REPO / top).rglob("*"))
            if p.is_file()
            and "__pycache__" not in p.parts
            and ".egg-info" not in str(p)
            and p.suffix in {"", ".py", ".md", ".toml", ".json", ".txt", ".html", ".sh", ".cfg"}
            and not (top == "examples" and p.parent != REPO / "examples")
        ]
    return [p for p in files if p.exists()]


@pytest.mark.parametrize("path", _docs(), ids=lambda p: str(p.relative_to(REPO)))
def test_docs_and_examples_do_not_cite_the_design_file(path):
    assert BRIEF not in path.read_text(encoding="utf-8")


def test_no_docstring_comment_or_line_anywhere_cites_the_design_file():
    found = [
        f"{path.relative_to(REPO)}:{i}"
        for path in _text_files()
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if BRIEF in line
    ]
    assert not found, found


#: ``docs/<page>.md#<section>`` and the further ``#<section>``s of the same citation
CITATION = re.compile(r"docs/([\w./-]+\.md)((?:#[\w-]+)(?:, #[\w-]+)*)")


def _anchors(page) -> set[str]:
    """GitHub's anchors of a Markdown page's headings."""
    out = set()
    for line in page.read_text(encoding="utf-8").splitlines():
        m = re.match(r"#+ (.*)", line)
        if m:
            title = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower())
            out.add(title.replace(" ", "-"))
    return out


def test_every_cited_design_section_exists():
    cited = 0
    missing = []
    for path in _text_files():
        for m in CITATION.finditer(path.read_text(encoding="utf-8")):
            page = REPO / "docs" / m.group(1)
            if not page.exists():
                missing.append(f"{path.relative_to(REPO)}: no page docs/{m.group(1)}")
                continue
            anchors = _anchors(page)
            for anchor in m.group(2).replace(",", "").split("#")[1:]:
                cited += 1
                if anchor.strip() not in anchors:
                    missing.append(f"{path.relative_to(REPO)}: docs/{m.group(1)}#{anchor.strip()}")
    assert not missing, missing
    assert cited > 100  # the code cites its design (a regex that matched nothing would pass)


def test_the_anchor_rule_is_githubs():
    page = REPO / "docs" / "design.md"
    assert {"data-flow", "validation", "er-ee-data", "gaussian-establishment-dp"} <= _anchors(page)


def _strings(tree: ast.AST) -> list[ast.Constant]:
    """String constants that are not docstrings."""
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docstrings.add(id(body[0].value))
    return [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings
    ]


def test_no_string_of_the_code_cites_the_design_file():
    found = []
    for path in sorted((REPO / "src").rglob("*.py")):
        for node in _strings(ast.parse(path.read_text(encoding="utf-8"))):
            if BRIEF in node.value:
                found.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert not found


def _commands(group, ctx, prefix: tuple[str, ...]) -> list[tuple[str, ...]]:
    out = []
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        out.append((*prefix, name))
        if hasattr(cmd, "list_commands"):  # a group (Typer vendors its own click)
            out += _commands(cmd, ctx, (*prefix, name))
    return out


def test_no_command_help_cites_the_design_file():
    root = typer.main.get_command(app)
    ctx = root.make_context("eree", [], resilient_parsing=True)
    commands = _commands(root, ctx, ())
    assert ("evaluate", "webb-all") in commands and ("ledger", "budget") in commands
    runner = CliRunner()
    for cmd in [(), *commands]:
        r = runner.invoke(app, [*cmd, "--help"])
        assert r.exit_code == 0, cmd
        assert BRIEF not in r.output, cmd


def test_readme_links_every_docs_page_and_every_link_resolves():
    import re

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for page in sorted((REPO / "docs").glob("*.md")):
        assert f"docs/{page.name}" in readme, page.name
    for path in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", path.read_text(encoding="utf-8")):
            if "://" in target:
                continue
            assert (path.parent / target).exists(), f"{path.name}: broken link {target}"
