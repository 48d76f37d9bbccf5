"""Layers point down only: every import inside `litpipe/` (at module level or in a function)
goes from a layer to the same or a lower one, no two packages import each other, no module
cycle, and only the Dagster instance's plumbing, the graph and what runs it import Dagster.

The graph is read from the source with `ast`, so a dodge (an import moved into a function to
break a cycle at import time) counts like any other import."""

from __future__ import annotations

import ast
import functools
import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "litpipe"

# The allowed layer order, lowest first: a module may import its own layer and the ones before
# it. Names are litpipe's top-level modules and packages.
LAYERS: list[tuple[str, ...]] = [
    # Pure helpers, importing nothing of litpipe: text (sentences, citation markers, Markdown
    # blocks, token estimates), files, hashing, a ValidationError in one line (validation).
    ("text", "files", "hashing", "url_credentials", "stopping", "validation"),
    ("artifacts", "schemas"),
    ("settings", "catalog", "citation_keys"),
    # Every setting by its dotted name, for the command line (`--set`, `config`, `init`).
    ("config",),
    ("ingest", "llm", "retrieval"),
    # Markers resolved against evidence, and the evidence block a writer is given.
    ("citations",),
    # The offline extractive engine, which writes every agent's reply from the inputs' own
    # text; it imports nothing of agents.
    ("extractive",),
    ("agents",),
    # Rendering (Markdown, HTML pages, figures): the workflows write their own output files.
    ("report",),
    ("workflows",),
    # Graders and benchmarks: they run the workflows and agents they measure.
    ("evaluation",),
    # The Dagster instance's plumbing: event log storages, the pool-slot wait, run liveness.
    ("instance",),
    ("defs",),
    # What runs the graph in-process for the commands (runs, backfills, requests, evaluations).
    ("runtime",),
    # The commands' display of their model calls, stage by stage (heard from llm's ledgers).
    ("progress",),
    # The commands' bodies: what each prints and its exit status (parsed and called by the CLI).
    ("commands",),
    ("cli",),
]
LAYER_OF = {name: index for index, names in enumerate(LAYERS) for name in names}
# Where `import dagster` is allowed: the instance's plumbing, the graph, the runtime that runs
# it in-process, the CLI.
DAGSTER_IMPORTERS = ("instance", "defs", "runtime", "cli")


@dataclass(frozen=True)
class Import:
    importer: str
    imported: str
    path: Path
    line: int


def _module_names() -> dict[str, Path]:
    names: dict[str, Path] = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


MODULES = _module_names()


def _package_of(module: str, path: Path) -> str:
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def _known(name: str) -> str:
    """The innermost litpipe module `name` lies in (`litpipe.x.f` -> `litpipe.x`)."""
    while name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def _imported_names(node: ast.Import | ast.ImportFrom, package: str) -> Iterator[str]:
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    if node.level:
        base = package.split(".")[: len(package.split(".")) - node.level + 1]
        source = ".".join([*base, *([node.module] if node.module else [])])
    else:
        source = node.module or ""
    for alias in node.names:
        # `from litpipe.agents import massrag` imports the module; `from x import name`, x.
        candidate = f"{source}.{alias.name}"
        yield candidate if candidate in MODULES else source


@functools.cache
def litpipe_imports() -> tuple[Import, ...]:
    """Every import of a litpipe module by another, read once for all the tests."""
    found: dict[tuple[str, str, int], Import] = {}
    for module, path in sorted(MODULES.items()):
        package = _package_of(module, path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            for name in _imported_names(node, package):
                if name == "litpipe" or name.startswith("litpipe."):
                    imported = _known(name)
                    if imported != module:
                        found[module, imported, node.lineno] = Import(
                            module, imported, path, node.lineno
                        )
    return tuple(found.values())


def _top(module: str) -> str:
    return module.split(".")[1] if module.count(".") else module


def _where(found: Import) -> str:
    return f"{found.path.relative_to(ROOT.parent)}:{found.line}"


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The cycles (each a path ending where it starts) of every strongly connected component of
    more than one node (Tarjan's algorithm): the shortest way round through each of its nodes."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(component)

    for node in sorted(edges):
        if node not in index:
            visit(node)
    cycles: dict[frozenset[str], list[str]] = {}
    for component in components:
        for start in sorted(component):
            cycle = _shortest_cycle(start, edges, component)
            cycles.setdefault(frozenset(cycle), cycle)
    return list(cycles.values())


def _shortest_cycle(start: str, edges: dict[str, set[str]], component: set[str]) -> list[str]:
    """The shortest path from `start` back to itself inside its component (breadth first)."""
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following: list[str] = []
        for node in frontier:
            for target in sorted(edges[node] & component):
                if target == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [*reversed(path), start]
                if target not in came_from:
                    came_from[target] = node
                    following.append(target)
        frontier = following
    raise AssertionError(f"{start} is in a component but on no cycle")


def test_every_module_lies_in_a_layer() -> None:
    unplaced = sorted({_top(module) for module in MODULES if module != "litpipe"} - set(LAYER_OF))
    assert not unplaced, f"add these to LAYERS: {unplaced}"


def test_imports_point_down() -> None:
    upward = [
        f"{_where(found)}: {found.importer} (layer {LAYER_OF[_top(found.importer)]}) imports "
        f"{found.imported} (layer {LAYER_OF[_top(found.imported)]})"
        for found in litpipe_imports()
        if found.importer != "litpipe"
        and found.imported != "litpipe"
        and LAYER_OF[_top(found.importer)] < LAYER_OF[_top(found.imported)]
    ]
    assert not upward, "imports from a lower layer to a higher one:\n" + "\n".join(upward)


def _graph(level: str) -> tuple[dict[str, set[str]], dict[tuple[str, str], str]]:
    """The import graph between packages (top-level names) or modules, and where each edge is
    first written."""
    edges: dict[str, set[str]] = {}
    where: dict[tuple[str, str], str] = {}
    for found in litpipe_imports():
        if "litpipe" in (found.importer, found.imported):
            continue
        pair = (
            (_top(found.importer), _top(found.imported))
            if level == "package"
            else (found.importer, found.imported)
        )
        if pair[0] == pair[1]:
            continue
        edges.setdefault(pair[0], set()).add(pair[1])
        edges.setdefault(pair[1], set())
        where.setdefault(pair, _where(found))
    return edges, where


@pytest.mark.parametrize("level", ["package", "module"])
def test_no_import_cycle(level: str) -> None:
    edges, where = _graph(level)
    cycles = [
        " -> ".join(cycle)
        + " ("
        + ", ".join(where[step] for step in itertools.pairwise(cycle))
        + ")"
        for cycle in _cycles(edges)
    ]
    assert not cycles, f"{level} import cycles:\n" + "\n".join(cycles)


def test_only_the_graph_imports_dagster() -> None:
    importers = []
    for module, path in MODULES.items():
        if _top(module) in DAGSTER_IMPORTERS:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            if any(name == "dagster" or name.startswith("dagster") for name in names):
                importers.append(f"{path.relative_to(ROOT.parent)}:{node.lineno}")
    assert not importers, (
        "Dagster imported outside litpipe/instance, litpipe/defs, litpipe/runtime and "
        "litpipe/cli.py: " + str(importers)
    )


# The packages that take what they use, never the whole `Settings`: the workflows (and what
# lies above them) unpack it into explicit arguments, and a step's agents are bound to their
# models once, in an `Asker` (its model settings, prompts and client).
EXPLICIT_ARGUMENTS = ("ingest", "retrieval", "citations", "report", "extractive", "agents")
# The whole settings by name, alone or in a union (`Settings | None`), not one of its groups.
WHOLE_SETTINGS = re.compile(r"(?<![\w.])Settings\b")


def _whole_settings_takers(source: str, where: str) -> list[str]:
    """The functions (methods included) with a parameter, and the classes with a field,
    annotated with the whole `Settings`."""
    takers = []
    for node in ast.walk(ast.parse(source)):
        annotations: list[ast.expr | None] = []
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            arguments = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
            annotations = [a.annotation for a in arguments]
        elif isinstance(node, ast.ClassDef):
            annotations = [
                field.annotation for field in node.body if isinstance(field, ast.AnnAssign)
            ]
        if any(a is not None and WHOLE_SETTINGS.search(ast.unparse(a)) for a in annotations):
            takers.append(f"{where}:{node.lineno} {node.name}")
    return takers


def test_below_the_workflows_no_function_takes_the_whole_settings() -> None:
    takers = [
        taker
        for module, path in MODULES.items()
        if _top(module) in EXPLICIT_ARGUMENTS
        for taker in _whole_settings_takers(
            path.read_text(encoding="utf-8"), str(path.relative_to(ROOT.parent))
        )
    ]
    assert not takers, "functions taking the whole Settings: " + ", ".join(takers)


def test_a_settings_parameter_or_field_is_found_however_it_is_written() -> None:
    source = (
        "def f(settings: Settings): ...\n"
        "def g(x: int, *, settings: Settings | None = None): ...\n"
        "class Step:\n    settings: 'Settings'\n"
        "def h(llm: LLMSettings, synthesis: config.SynthesisSettings): ...\n"
    )
    assert _whole_settings_takers(source, "m") == ["m:1 f", "m:2 g", "m:3 Step"]


def test_the_graph_reader_sees_function_level_and_relative_imports() -> None:
    """The reader resolves `from . import x` and finds an import inside a function body."""
    source = "from . import base\n\ndef f():\n    from .massrag import answer\n"
    package = "litpipe.agents"
    tree = ast.parse(source)
    names = [
        name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for name in _imported_names(node, package)
    ]
    assert names == ["litpipe.agents.base", "litpipe.agents.massrag"]


@pytest.mark.parametrize("argv", [["--help"], ["run", "--help"]])
def test_help_imports_neither_dagster_nor_lancedb_nor_the_embedder(argv: list[str]) -> None:
    """`litpipe --help` pays for none of the heavy imports: the commands' modules take them
    inside their functions."""
    import subprocess
    import sys

    script = (
        "import sys\nfrom litpipe.cli import main\ntry:\n    main(sys.argv[1:])\n"
        "except SystemExit:\n    pass\n"
        "print(sorted(m for m in ('dagster', 'lancedb', 'sentence_transformers') "
        "if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, *argv], capture_output=True, text=True, check=True
    )
    assert done.stdout.splitlines()[-1] == "[]"


def test_loading_the_graph_imports_no_store_pdf_or_model_library() -> None:
    """Every Dagster process loads the whole graph, whatever its job: the nightly digest's run
    worker, which opens no LanceDB table, no PDF and no model, pays none of their imports
    (lancedb 1-2 s, pymupdf about 0.5 s); the steps that use them import them."""
    import subprocess
    import sys

    heavy = ("lancedb", "pymupdf", "litellm", "sentence_transformers", "torch")
    script = (
        "import sys\nimport litpipe.defs.definitions\n"
        f"print(sorted(m for m in {heavy!r} if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert done.stdout.splitlines()[-1] == "[]"
