"""User-visible text never cites DESIGN.md (users do not have it): docs, examples, README,
every command's help, and the strings of the code (messages, manifests, reports)."""

from __future__ import annotations

import ast

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


@pytest.mark.parametrize("path", _docs(), ids=lambda p: str(p.relative_to(REPO)))
def test_docs_and_examples_do_not_cite_the_design_file(path):
    assert "DESIGN" not in path.read_text(encoding="utf-8")


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
            if "DESIGN" in node.value:
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
        assert "DESIGN" not in r.output, cmd


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
