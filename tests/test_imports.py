"""No import circle among the project's own modules (``attn/`` and ``tools/``).

The imports are read from the source with ``ast`` (nothing is executed), imports inside functions
included: a circle closed by a lazy import is still a circle (``tools/site_ext.py`` once imported
``build_lite`` inside a handler while ``build_lite`` imported it). ``attn`` is imported from the
repository root; ``tools/`` is itself the import-path entry of its modules (``build_lite``,
``sphinx_site.mathjax``...). Importing ``p.m`` first imports the package ``p``; that edge is left out
only for a module inside ``p`` itself, which ``p`` is already importing when it runs.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Folder scanned -> the import-path entry its modules are imported from.
SOURCE_ROOTS = {ROOT / "attn": ROOT, ROOT / "tools": ROOT / "tools"}


def project_modules(roots: dict[Path, Path]) -> dict[str, Path]:
    """Dotted name -> file, for every ``.py`` file under the scanned folders."""
    modules = {}
    for folder, entry in roots.items():
        for path in sorted(folder.rglob("*.py")):
            parts = list(path.relative_to(entry).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def _ancestors(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The project modules that importing ``name`` (the file ``path``) imports."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            targets |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            for alias in node.names:  # `from p import m` imports the module p.m when there is one
                targets.add(f"{module}.{alias.name}" if f"{module}.{alias.name}" in known else module)
    found = set()
    for target in targets:
        chain = [*_ancestors(target), target]
        found |= {t for t in chain if t in known and t not in _ancestors(name) and t != name}
    return found


def import_graph(roots: dict[Path, Path]) -> dict[str, set[str]]:
    modules = project_modules(roots)
    return {name: imports_of(name, path, set(modules)) for name, path in modules.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every circle found by a depth-first walk, as the path that closes it (first module repeated)."""
    found, state, stack = [], {}, []

    def visit(node: str) -> None:
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                found.append([*stack[stack.index(nxt):], nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return found


def _tree(tmp_path: Path, files: dict[str, str]) -> dict[Path, Path]:
    for name, text in files.items():
        path = tmp_path / "tools" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return {tmp_path / "tools": tmp_path / "tools"}


def test_the_project_has_no_import_circle():
    graph = import_graph(SOURCE_ROOTS)
    # The graph is the real one: the edges the build and the package are known to have.
    assert "attn.core" in graph["attn"]
    assert "attn._checks" in graph["attn.core"]
    assert {"export_executed", "sphinx_site.downloads"} <= graph["build_lite"]
    assert {"sphinx_site.identity", "sphinx_site.publish"} <= graph["sphinx_site"]
    assert "sphinx_site.mathjax" in graph["sphinx_site.publish"]
    assert circles(graph) == []


def test_the_site_extension_imports_neither_build_script():
    graph = import_graph(SOURCE_ROOTS)
    scripts = {"build_lite", "export_executed"}
    assert {name: graph[name] & scripts for name in graph if name.split(".")[0] == "sphinx_site"
            if graph[name] & scripts} == {}


CIRCLES = {
    "two modules": ({"a.py": "import b\n", "b.py": "from a import x\n"}, ["a", "b", "a"]),
    # The circle tools/site_ext.py and tools/build_lite.py had before the package: closed inside a function.
    "lazy import": ({"site_ext.py": "def button():\n    from build_lite import HEAVY\n    return HEAVY\n",
                     "build_lite.py": "import sys\nfrom site_ext import WHEEL_DIR, attn_wheel_name\n"},
                    ["build_lite", "site_ext", "build_lite"]),
    # Importing pkg.mod runs pkg/__init__.py: a script that __init__ imports closes a circle.
    "through a package": ({"pkg/__init__.py": "from . import mod\nimport script\n", "pkg/mod.py": "X = 1\n",
                           "script.py": "from pkg.mod import X\n"}, ["pkg", "script", "pkg"]),
}


@pytest.mark.parametrize("case", CIRCLES)
def test_a_circle_is_found(tmp_path, case):
    files, circle = CIRCLES[case]
    assert circles(import_graph(_tree(tmp_path, files))) == [circle]


def test_a_package_importing_its_own_modules_is_no_circle(tmp_path):
    roots = _tree(tmp_path, {
        "pkg/__init__.py": "from . import a, b\n",
        "pkg/a.py": "from .b import Y\nfrom pkg import b\n",
        "pkg/b.py": "Y = 2\n",
        "script.py": "from pkg.a import Y\n",
    })
    graph = import_graph(roots)
    assert graph == {"pkg": {"pkg.a", "pkg.b"}, "pkg.a": {"pkg.b"}, "pkg.b": set(), "script": {"pkg", "pkg.a"}}
    assert circles(graph) == []


# attn's layers (ARCHITECTURE.md): a module imports only from its own layer or the layers below it.
# The book helpers stand aside: they import only the base and each other (plotting writes figure numbers
# with prose's decimal rule), and no model or experiment imports them.
# A new module must be placed here; the test names any module it does not know.
ATTN_LAYERS = {
    "base": {"attn._checks", "attn._parallel"},
    "primitives": {"attn.core", "attn.classic", "attn.multihead", "attn.multihead_luong",
                   "attn.self_attention", "attn.encoder", "attn.positional", "attn.tiled", "attn.decoder"},
    "training": {"attn.training", "attn.training.backward", "attn.training.optim", "attn.training.gru",
                 "attn.training.seq2seq", "attn.training.encoder_model", "attn.training.decoder_backward",
                 "attn.training.transformer"},
    "experiments": {"attn.training.copytask", "attn.training.tasks", "attn.training.interpret",
                    "attn.training.copy_transformer", "attn.training.loop", "attn.measure", "attn.experiments"},
    "book": {"attn.plotting", "attn.diagrams", "attn.prose"},
}
LAYER_ORDER = ["base", "primitives", "training", "experiments"]


def layer_violations(graph: dict[str, set[str]], layers: dict[str, set[str]]) -> list[str]:
    """Each import of a higher layer (or of a book helper by a model), as 'importer -> imported'."""
    where = {module: layer for layer, modules in layers.items() for module in modules}
    rank = {layer: i for i, layer in enumerate(LAYER_ORDER)}
    found = []
    for module, imported in sorted(graph.items()):
        if module not in where:
            continue
        for target in sorted(imported):
            if target not in where:
                continue
            mine, theirs = where[module], where[target]
            allowed = theirs in ("base", "book") if mine == "book" else theirs != "book" and rank[theirs] <= rank[mine]
            if not allowed:
                found.append(f"{module} ({mine}) -> {target} ({theirs})")
    return found


def test_every_attn_module_has_a_layer():
    modules = {name for name in project_modules(SOURCE_ROOTS) if name.startswith("attn.")}
    placed = set().union(*ATTN_LAYERS.values())
    assert sorted(modules - placed) == [], "place the new module in ATTN_LAYERS (ARCHITECTURE.md)"
    assert sorted(placed - modules) == []


def test_attn_layers_import_only_downwards():
    assert layer_violations(import_graph(SOURCE_ROOTS), ATTN_LAYERS) == []


def test_an_upward_import_is_a_violation():
    graph = {"attn.core": {"attn.training.backward", "attn._checks"},
             "attn.training.backward": {"attn.core"}, "attn.plotting": {"attn.core", "attn.prose"}, "attn.training.tasks": {"attn.prose"}}
    assert layer_violations(graph, ATTN_LAYERS) == [
        "attn.core (primitives) -> attn.training.backward (training)",
        "attn.plotting (book) -> attn.core (primitives)",
        "attn.training.tasks (experiments) -> attn.prose (book)",
    ]


def test_no_module_outside_attn_training_imports_it():
    # the rule the folder shows: graded and lesson code (attn/*.py) never depends on training code
    graph = import_graph(SOURCE_ROOTS)
    outside = {m for m in graph if m.startswith("attn") and not m.startswith("attn.training")}
    assert sorted(f"{m} -> {t}" for m in outside for t in graph[m] if t.startswith("attn.training")) == []
