"""Every module the code, tests and benchmarks import is installed by the project's own files.

A fresh clone in a fresh virtual environment (``.ci/run``, the README's developer line)
has only what ``pyproject.toml`` declares: the dependencies and the extras. A test that
imports a module nothing declares passes where someone installed it by hand and stops at
collection everywhere else. This test reads every ``import`` (and every
``pytest.importorskip`` / ``importlib.import_module`` of a literal name) in ``tests/``,
``benchmarks/`` and ``src/eree`` and fails on a top-level module that is neither the
standard library, eree, a module of the tests or benchmarks themselves, nor provided by a
declared distribution or by what it requires (``PIL`` comes with matplotlib's pillow).

A distribution's import names are read from its installed metadata (``python-flint`` →
``flint``); one that is declared but not installed here provides its own normalised name.

Tumult Analytics (``tmlt``) is no extra: ``benchmarks/bench_tumult.py`` runs it in a
child process of its own virtual environment, since it pins a PySpark, pandas and NumPy
that the ``dev`` extra's cannot share; no module here imports it.
"""

from __future__ import annotations

import ast
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[1]

#: the calls that import a module named by their first (literal) argument
_IMPORTING_CALLS = {("pytest", "importorskip"), ("importlib", "import_module")}


def declared(pyproject: dict) -> dict[str, list[Requirement]]:
    """Each group (``dependencies`` and every extra) → its requirements."""
    project = pyproject["project"]
    groups = {"dependencies": [Requirement(r) for r in project.get("dependencies", [])]}
    for extra, reqs in project.get("optional-dependencies", {}).items():
        groups[extra] = [Requirement(r) for r in reqs]
    return groups


def _applies(req: Requirement, extras: set[str]) -> bool:
    if req.marker is None:
        return True
    return any(req.marker.evaluate({"extra": e}) for e in (extras or {""}))


def closure(requirements: list[Requirement]) -> set[str]:
    """The canonical names of the distributions ``requirements`` install, transitively
    (through the installed metadata; a distribution not installed here stops the walk)."""
    seen: set[str] = set()
    todo = [(r, set(r.extras)) for r in requirements if _applies(r, set())]
    while todo:
        req, extras = todo.pop()
        name = canonicalize_name(req.name)
        key = name + "[" + ",".join(sorted(extras)) + "]"
        if key in seen:
            continue
        seen.add(key)
        try:
            requires = metadata.requires(req.name) or []
        except metadata.PackageNotFoundError:
            continue
        for line in requires:
            sub = Requirement(line)
            if _applies(sub, extras):
                todo.append((sub, set(sub.extras)))
    return {k.split("[", 1)[0] for k in seen}


def import_names(distributions: set[str]) -> set[str]:
    """The top-level modules the ``distributions`` (canonical names) provide."""
    provided = {d.replace("-", "_") for d in distributions}
    for module, dists in metadata.packages_distributions().items():
        if any(canonicalize_name(d) in distributions for d in dists):
            provided.add(module)
    return provided


def imports(path: Path) -> list[tuple[str, int]]:
    """(top-level module, line) of every absolute import in ``path``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(a.name.split(".")[0], node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.module.split(".")[0], node.lineno))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and (node.func.value.id, node.func.attr) in _IMPORTING_CALLS
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.append((node.args[0].value.split(".")[0], node.lineno))
    return found


def _files(top: str) -> list[Path]:
    return sorted(p for p in (REPO / top).rglob("*.py") if "__pycache__" not in p.parts)


def local_modules() -> set[str]:
    """The tests' and benchmarks' own top-level modules (``tests``, ``common``, ...)."""
    own = {"eree", "tests"}
    for top in ("tests", "benchmarks"):
        own |= {p.stem for p in _files(top)}
        own |= {p.parent.name for p in _files(top) if p.name == "__init__.py"}
    return own


def undeclared(tops: tuple[str, ...], provided: set[str]) -> list[str]:
    """``file:line: module`` for each import under ``tops`` that nothing provides."""
    own = local_modules()
    missing = []
    for top in tops:
        for path in _files(top):
            for module, line in imports(path):
                if module in sys.stdlib_module_names or module in own or module in provided:
                    continue
                missing.append(f"{path.relative_to(REPO)}:{line}: {module}")
    return missing


def _pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))


def test_every_import_of_the_tests_and_benchmarks_is_declared():
    groups = declared(_pyproject())
    everything = [r for reqs in groups.values() for r in reqs]
    provided = import_names(closure(everything))
    missing = undeclared(("tests", "benchmarks"), provided)
    assert not missing, (
        "imported but provided by no dependency or extra of pyproject.toml (a fresh "
        "environment would not have them):\n" + "\n".join(missing)
    )


def test_every_import_of_the_package_is_declared():
    groups = declared(_pyproject())
    everything = [r for reqs in groups.values() for r in reqs if r.name != "eree"]
    dev_only = {canonicalize_name(r.name) for r in groups.get("dev", [])} - {
        canonicalize_name(r.name) for g, reqs in groups.items() if g != "dev" for r in reqs
    }
    # the package itself may use a dependency or a user-facing extra, never a test tool
    provided = import_names(closure([r for r in everything if r.name not in dev_only]))
    missing = undeclared(("src",), provided)
    assert not missing, "imported by eree but declared by no dependency or extra:\n" + "\n".join(
        missing
    )


def test_the_check_reads_skips_and_maps_distributions_to_their_modules(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("import a.b\nfrom c import d\nfrom . import e\npytest.importorskip('f.g')\n")
    assert imports(probe) == [("a", 1), ("c", 2), ("f", 4)]
    provided = import_names(closure(declared(_pyproject())["dependencies"]))
    assert {"flint", "PIL", "polars", "numpy"} <= provided  # PIL: matplotlib's pillow
    assert "pytest" not in provided and "mpmath" not in provided
