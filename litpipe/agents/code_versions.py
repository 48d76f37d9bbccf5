"""The code a module's outputs depend on, for code versions: the module and the litpipe
modules it imports, transitively, read from the source with `ast`.

An agent's code version (`Asker.version`) takes its module's: the agent's module imports its
offline engine (`litpipe.extractive.<agent>`) and what that engine uses (text helpers,
citations, retrieval's scoring, the schemas: the schema is the contract), so an edit to one
engine module changes the code version of exactly the agents that import it, and only their
assets go stale. An evaluation's takes its module's the same way (the agents it asks, its
metrics and baselines). Imports count wherever they are (at the top or in a function, as
`test_layers` reads them), except those only a type checker reads. Not followed: the machinery
every agent is asked through (`asker`, `base`: how to ask, not what is answered), the LLM client
(`litpipe.llm`: a reply depends on the route and the messages, which the code version and the
reply cache hold, not on the client's code), the settings (the values that decide an output are
hashed themselves) and the hashing.

Each module's imports are read once per process, when the definitions load.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import inspect
import re
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

from litpipe.hashing import digest

LITPIPE_ROOT = Path(__file__).resolve().parents[1]
# Where an import statement starts: a line's start, after its indentation (a line of a string
# that parses as an import is read as one: a dependency more, a coarser version, never a wrong
# one); and an `if TYPE_CHECKING:` block, its indented lines and blank lines.
_IMPORT_START = re.compile(r"^[ \t]*(?:from[ \t]+[.\w]+[ \t]+import\b|import[ \t]+[.\w])", re.M)
_TYPE_CHECKING_BLOCK = re.compile(
    r"^([ \t]*)if[ \t]+(?:typing\.)?TYPE_CHECKING[ \t]*:[ \t]*\n(?:\1[ \t]+\S.*\n|[ \t]*\n)*", re.M
)
# Packages and modules whose code decides no output (see the module's docstring).
NOT_FOLLOWED = (
    "litpipe.agents.asker",
    "litpipe.agents.base",
    "litpipe.hashing",
    "litpipe.llm",
    "litpipe.settings",
)


def module_source(name: str) -> str:
    """The source of module `name`: a module already imported as it was loaded (an agent of a
    script's `__main__` too), else a litpipe module's file, read without importing it."""
    module = sys.modules.get(name)
    if module is not None:
        return inspect.getsource(module)
    path = _litpipe_file(name)
    if path is None:
        raise ModuleNotFoundError(f"no source for module {name!r}")
    return path.read_text(encoding="utf-8")


@functools.cache
def module_imports(name: str) -> frozenset[str]:
    """The litpipe modules module `name` imports (`from litpipe.schemas import Answer`: the
    package `litpipe.schemas`; `from litpipe import text`: the module `litpipe.text`)."""
    package = _package(name)
    found: set[str] = set()
    for node in import_statements(module_source(name)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
            continue
        source = importlib.util.resolve_name("." * node.level + (node.module or ""), package)
        for alias in node.names:
            candidate = f"{source}.{alias.name}"
            found.add(candidate if _litpipe_file(candidate) is not None else source)
    return frozenset(imported for imported in found if _followed(imported))


@functools.cache
def imported_code(root: str) -> tuple[str, ...]:
    """`root` and the litpipe modules it imports (`module_imports`, transitively), in name
    order."""
    found = {root}
    unread = [root]
    while unread:
        for imported in module_imports(unread.pop()):
            if imported not in found:
                found.add(imported)
                unread.append(imported)
    return tuple(sorted(found))


@functools.cache
def imported_code_version(root: str) -> str:
    """Hash of the source of `imported_code(root)`, each under its name."""
    return digest(*(f"{name}\n{module_source(name)}" for name in imported_code(root)))


def _followed(name: str) -> bool:
    inside = name == "litpipe" or name.startswith("litpipe.")
    return inside and not any(
        name == excluded or name.startswith(f"{excluded}.") for excluded in NOT_FOLLOWED
    )


@functools.cache
def _litpipe_file(name: str) -> Path | None:
    """The file of litpipe module `name` (a package's `__init__.py`); None for any other name."""
    first, _, rest = name.partition(".")
    if first != "litpipe":
        return None
    place = LITPIPE_ROOT.joinpath(*rest.split(".")) if rest else LITPIPE_ROOT
    for path in (place.with_suffix(".py"), place / "__init__.py"):
        if path.is_file():
            return path
    return None


def _package(name: str) -> str:
    """The package relative imports of module `name` start from."""
    module = sys.modules.get(name)
    if module is not None:
        return module.__package__ or ""
    path = _litpipe_file(name)
    return name if path is not None and path.name == "__init__.py" else name.rpartition(".")[0]


def import_statements(source: str) -> list[ast.Import | ast.ImportFrom]:
    """The import statements of `source` that run (not those of an `if TYPE_CHECKING:` block),
    each found where a line starts one and parsed alone: ten times quicker than parsing the
    whole module, and the definitions' load reads a hundred. Where one does not parse alone
    (a line of prose that starts with "import", a continued line), the whole module is parsed
    (`parsed_import_statements`)."""
    type_only = [block.span() for block in _TYPE_CHECKING_BLOCK.finditer(source)]
    found: list[ast.Import | ast.ImportFrom] = []
    for start in (line.start() for line in _IMPORT_START.finditer(source)):
        if any(begin <= start < end for begin, end in type_only):
            continue
        end = source.find("\n", start)
        end = len(source) if end < 0 else end
        if "(" in source[start:end]:  # a parenthesized list of names, on many lines
            close = source.find(")", start)
            end = len(source) if close < 0 else close + 1
        try:
            statements = ast.parse(source[start:end].strip()).body
        except SyntaxError:
            return parsed_import_statements(source)
        found += [node for node in statements if isinstance(node, ast.Import | ast.ImportFrom)]
    return found


def parsed_import_statements(source: str) -> list[ast.Import | ast.ImportFrom]:
    """What `import_statements` finds, from the whole module's syntax tree."""
    return list(_run_time_imports([ast.parse(source)]))


def _run_time_imports(nodes: Iterable[ast.AST]) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in nodes:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            yield from _run_time_imports(node.orelse)
        else:
            # Imports are statements: an expression holds none (and is most of a module).
            yield from _run_time_imports(
                child for child in ast.iter_child_nodes(node) if not isinstance(child, ast.expr)
            )


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )
