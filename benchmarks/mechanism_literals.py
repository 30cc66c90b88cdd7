"""Count mechanism-name string literals outside the registry and the spec parser.

Usage (from the repository root): ``python benchmarks/mechanism_literals.py``

Every registered mechanism name (``eree.mechanisms.registry``) written as a string
literal in ``src/`` is listed with its file and lines, except in the registry itself,
the spec parser, docstrings and ``__all__`` lists (which name functions). The target is
0: code refers to a mechanism through its class (``LogLaplace.name``) or the registry.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXCLUDE = {"src/eree/mechanisms/registry.py", "src/eree/release/spec.py"}


def main() -> int:
    sys.path.insert(0, str(ROOT / "src"))
    from eree.mechanisms.registry import mechanism_names

    names = set(mechanism_names())
    total = 0
    for p in sorted((ROOT / "src").rglob("*.py")):
        rel = str(p.relative_to(ROOT))
        if rel in EXCLUDE:
            continue
        tree = ast.parse(p.read_text())
        skip: set[int] = set()
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            if (
                isinstance(node, ast.Module | ast.FunctionDef | ast.ClassDef)
                and body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
            ):
                skip.add(id(body[0].value))
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
            ):
                skip.update(id(c) for c in ast.walk(node.value))
        hits = sorted(
            (n.lineno, n.value)
            for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and n.value in names and id(n) not in skip
        )
        if hits:
            total += len(hits)
            print(f"{rel}: {len(hits)}  " + ", ".join(f"{v}@{ln}" for ln, v in hits))
    print(f"total: {total}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
