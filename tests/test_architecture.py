"""The house's rules, read from the code's own imports (docs/design.md#data-flow, #core-objects).

Every ``import`` in ``src/eree`` counts, including the lazy ones inside functions: no
module may import itself back through others (no circles), the layers only point
down, and only the command (``eree.cli``) imports the command-line libraries, so that
everything else is library code a notebook can call. Run ``python
tests/test_architecture.py`` to print the graph's facts.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

#: the command-line libraries: imported by the command (``eree.cli``) only
CLI_LIBRARIES = ("typer", "click", "rich")

#: what each package may import of eree (besides itself and ``eree.errors``)
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "htmlpage": set(),  # the HTML page builder every report uses (imports nothing of eree)
    "data": set(),
    "postprocess": {"data"},  # the QCEW catalogue (eree.data.qcew) for tabulation
    "privacy": set(),
    "engine": {"data"},
    "mechanisms": {"privacy"},
    "synth": {"data"},
    # engine: the map over independent units (engine/unitmap.py) the WAC coarsening's
    # chunks run on
    "suppression": {"data", "postprocess", "engine"},
    # suppression: the coarsening protection mode (release/coarsening.py)
    "release": {
        "data",
        "engine",
        "mechanisms",
        "privacy",
        "postprocess",
        "htmlpage",
        "suppression",
    },
    "evaluate": {
        "data",
        "engine",
        "mechanisms",
        "privacy",
        "postprocess",
        "release",
        "synth",
        "suppression",
        "htmlpage",
    },
    "cli": {"*"},  # the ``eree`` command (eree.cli): the one place that imports Typer and Rich
    "__init__": set(),
}


def _module_name(path: Path) -> str:
    rel = path.relative_to(SRC).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def import_graph() -> dict[str, set[str]]:
    """Module → the eree modules it imports (anywhere in the file)."""
    modules = {_module_name(p): p for p in SRC.joinpath("eree").rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            for t in targets:
                if t.startswith("eree") and t in modules and t != name:
                    graph[name].add(t)
    return graph


def cli_library_imports() -> dict[str, set[str]]:
    """Module → the command-line libraries (:data:`CLI_LIBRARIES`) it imports, if any."""
    out: dict[str, set[str]] = {}
    for path in SRC.joinpath("eree").rglob("*.py"):
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module.split(".")[0])
        if found & set(CLI_LIBRARIES):
            out[_module_name(path)] = found & set(CLI_LIBRARIES)
    return out


def outside_the_cli(importers: dict[str, set[str]]) -> list[str]:
    """The modules outside ``eree.cli`` that import a command-line library."""
    return sorted(m for m in importers if m != "eree.cli" and not m.startswith("eree.cli."))


def private_imports() -> list[str]:
    """Imports of another module's private name (``from eree.x import _name``).

    A name with a leading underscore is its module's own; what two modules share is public
    in the module that owns it.
    """
    out = []
    for path in sorted(SRC.joinpath("eree").rglob("*.py")):
        me = _module_name(path)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("eree"):
                for a in node.names:
                    if a.name.startswith("_") and not a.name.startswith("__") and node.module != me:
                        out.append(f"{me} imports {node.module}.{a.name}")
    return out


#: no module of eree may grow past this many lines (one job per module)
MAX_MODULE_LINES = 1000


def long_modules() -> list[str]:
    """The modules of eree over :data:`MAX_MODULE_LINES` lines."""
    return sorted(
        f"{_module_name(p)} ({n} lines)"
        for p in SRC.joinpath("eree").rglob("*.py")
        if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES
    )


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def upward_imports(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Imports a package's rule in :data:`ALLOWED` does not allow."""
    bad = []
    for a, targets in graph.items():
        pa = _package(a)
        allowed = ALLOWED[pa]
        for b in targets:
            pb = _package(b)
            if pb in (pa, "errors") or pb == "__init__" or "*" in allowed:
                continue
            if pb not in allowed:
                bad.append((a, b))
    return sorted(bad)


#: the engines' data classes and the engines themselves: what loaded data are, per engine
ENGINE_DATA = (
    "eree.data.job_tables",
    "eree.data.establishments",
    "eree.engine.polars",
    "eree.engine.spark",
)
#: of those, what the release path may import: the Spark settings' checks (spec keys)
ENGINE_DATA_ALLOWED = ("eree.engine.spark.settings",)
#: the packages that hold loaded data only as the engine's opaque handle (engine/base.py)
HANDLE_ONLY = ("release", "postprocess")


def engine_data_imports(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Imports of an engine's data classes (or an engine) by the release path.

    The release path asks the engine every question about loaded data
    (:class:`eree.engine.base.Engine`); a release that read a frame itself would work on
    one engine and crash on the other.
    """
    bad = []
    for a, targets in graph.items():
        if _package(a) not in HANDLE_ONLY:
            continue
        for b in targets:
            inside = any(b == d or b.startswith(d + ".") for d in ENGINE_DATA)
            if inside and b not in ENGINE_DATA_ALLOWED:
                bad.append((a, b))
    return sorted(bad)


def test_the_release_path_never_imports_an_engines_data_classes():
    assert engine_data_imports(import_graph()) == []
    # the check sees such an import where one is: the evaluations read the data directly
    evaluate = {m: t for m, t in import_graph().items() if _package(m) == "evaluate"}
    assert any(
        b.startswith("eree.data.job_tables") for targets in evaluate.values() for b in targets
    )


def test_every_package_has_a_rule():
    assert {_package(m) for m in import_graph()} <= set(ALLOWED)


def test_no_import_circles():
    assert cycles(import_graph()) == []


def test_no_upward_imports():
    assert upward_imports(import_graph()) == []


def test_only_the_cli_imports_typer_and_rich():
    importers = cli_library_imports()
    assert outside_the_cli(importers) == []
    assert "eree.cli" in importers  # the check sees the command's own imports


def test_no_module_imports_another_modules_private_name():
    assert private_imports() == []


def test_no_module_is_over_a_thousand_lines():
    assert long_modules() == []


def test_the_checks_can_fail():
    g = {"eree.a.x": {"eree.b.y"}, "eree.b.y": {"eree.a.x"}, "eree.c.z": set()}
    assert cycles(g) == [["eree.a.x", "eree.b.y"]]
    assert upward_imports({"eree.mechanisms.x": {"eree.release.y"}, "eree.release.y": set()}) == [
        ("eree.mechanisms.x", "eree.release.y")
    ]
    imports = {"eree.cli": {"typer"}, "eree.cli.audit": {"rich"}, "eree.evaluate.x": {"typer"}}
    assert outside_the_cli(imports) == ["eree.evaluate.x"]


if __name__ == "__main__":
    g = import_graph()
    print(f"{len(g)} modules, {sum(map(len, g.values()))} imports")
    print(f"circles: {cycles(g)}")
    print(f"imports against the layer rules: {upward_imports(g)}")
    print(f"command-line libraries outside eree.cli: {outside_the_cli(cli_library_imports())}")
    print(f"imports of another module's private name: {private_imports()}")
    print(f"modules over {MAX_MODULE_LINES} lines: {long_modules()}")


def test_mypy_sees_a_release_that_reads_the_engines_data(tmp_path):
    """The handle types leave nothing to reach into: mypy flags a frame read off them."""
    api = __import__("pytest").importorskip("mypy.api")
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from eree.engine.base import LoadedEstablishments, LoadedJobTables\n"
        "def counts(data: LoadedJobTables) -> object:\n"
        "    return data.workplaces.height\n"
        "def columns(data: LoadedEstablishments) -> object:\n"
        "    return data.frame.columns, data.columns, data.id_column\n"
    )
    out, _, status = api.run(
        [str(probe), "--follow-imports=silent", "--no-incremental", "--ignore-missing-imports"]
    )
    assert status == 1, out
    assert '"LoadedJobTables" has no attribute "workplaces"' in out
    assert '"LoadedEstablishments" has no attribute "frame"' in out
    assert out.count("error:") == 2, out  # the public facts (columns, id column) are fine
