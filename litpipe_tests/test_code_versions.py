"""Code versions per agent: an edit to one module of the offline engine changes the code version
of exactly the assets whose agents (or evaluations) import it, and only those go stale in
Dagster; the quick reader of a module's imports finds what a whole parse finds.

The edits are made to the source as `litpipe.agents.code_versions` reads it, not to the tree:
its reader is replaced for the one module, and its per-process caches emptied."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.definitions.data_version import CachingStaleStatusResolver, StaleStatus
from dagster._core.loader import LoadingContextForTest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from litpipe.agents import code_versions
from litpipe.catalog import Catalog
from litpipe.defs.definitions import build_definitions
from litpipe.defs.partitions import papers
from litpipe.ingest.sources import pdf_source
from litpipe.runtime.runner import open_instance, paper_asset_keys
from litpipe.settings import Settings
from litpipe.settings.groups import settings_groups
from litpipe_tests.bundled import short_paper

# Used by one agent, `tldr`, which one evaluation asks.
TLDR_ENGINE = "litpipe.extractive.tldr"
# What the relevance and debate agents score: the rerankers', so retrieval's where the
# reranker is `relevance`, and related work's debate; and the evaluations that import them.
PASSAGES_ENGINE = "litpipe.extractive.passages"
# Used by one agent, `paper_abstract`, and the synthesis pipelines' evaluation that runs it.
ABSTRACT_ENGINE = "litpipe.extractive.paper_abstract"


@pytest.fixture
def settings(tmp_path: Path, tiny_model: Path) -> Settings:
    return Settings(
        home=tmp_path / "home",
        corpus_roots=[],
        ingest={"embedder": str(tiny_model)},
        retrieval={"reranker": "relevance"},
    )


def forget_read_code() -> None:
    for cached in (
        code_versions.module_imports,
        code_versions.imported_code,
        code_versions.imported_code_version,
    ):
        cached.cache_clear()


@pytest.fixture
def edit(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], None]]:
    """`edit(module)`: that module's source reads as edited (a line added) from then on, with
    the edits made before."""
    read = code_versions.module_source
    edited: set[str] = set()

    def edit_module(module: str) -> None:
        edited.add(module)
        monkeypatch.setattr(
            code_versions,
            "module_source",
            lambda name: read(name) + ("\n# edited\n" if name in edited else ""),
        )
        forget_read_code()

    forget_read_code()
    yield edit_module
    monkeypatch.undo()
    forget_read_code()


def code_versions_of(definitions: dg.Definitions) -> dict[str, str | None]:
    graph = definitions.resolve_asset_graph()
    return {key.to_user_string(): graph.get(key).code_version for key in graph.get_all_asset_keys()}


def changed_by(edited: str, settings: Settings, edit: Callable[[str], None]) -> set[str]:
    before = code_versions_of(build_definitions(**settings_groups(settings)))
    edit(edited)
    after = code_versions_of(build_definitions(**settings_groups(settings)))
    assert after.keys() == before.keys()
    return {name for name in before if after[name] != before[name]}


def test_an_engine_module_changes_the_code_version_of_its_agents_assets_only(
    settings: Settings, edit: Callable[[str], None]
) -> None:
    # Before code versions per agent, each of these edits changed all ten assets whose code
    # version hashes an agent (every model step), and not the one evaluation asking `tldr`.
    assert changed_by(TLDR_ENGINE, settings, edit) == {"eval_tldr"}
    assert changed_by(PASSAGES_ENGINE, settings, edit) == {
        "question_evidence",
        "cross_paper_questions",
        "relationship_analysis",
        # Its cells' passages are reranked as a paper's evidence is.
        "comparison_table",
        "query_summary",
        "collection_answer",
        "related_work",
        "eval_related_work",
        # `eval_scholarqa` is reported by its command, which asks `collection_answer` (above).
        "eval_scholarqa_answer_modes",
        "eval_synthesis_pipelines",
    }


def test_without_a_model_reranker_the_passages_engine_is_no_part_of_retrieval(
    settings: Settings, edit: Callable[[str], None]
) -> None:
    unranked = settings.model_copy(
        update={"retrieval": settings.retrieval.model_copy(update={"reranker": "none"})}
    )
    changed = changed_by(PASSAGES_ENGINE, unranked, edit)
    assert "related_work" in changed
    assert not changed & {"question_evidence", "cross_paper_questions", "relationship_analysis"}


def stale_assets(instance: dg.DagsterInstance, definitions: dg.Definitions, paper: str) -> set[str]:
    resolver = CachingStaleStatusResolver(
        instance, definitions.resolve_asset_graph(), LoadingContextForTest(instance)
    )
    return {
        key.to_user_string()
        for key in paper_asset_keys(definitions)
        if resolver.get_status(key, paper) == StaleStatus.STALE
    }


def test_dagster_shows_stale_only_the_assets_whose_agents_import_the_edited_module(
    settings: Settings, tmp_path: Path, edit: Callable[[str], None]
) -> None:
    instance = open_instance(settings.llm, settings.paths)
    folder = tmp_path / "papers"
    folder.mkdir()
    source = pdf_source(short_paper(folder, 0))
    Catalog(settings.paths.catalog_path).register(source, "bio")
    instance.add_dynamic_partitions(papers.name, [source.paper_id])
    definitions = build_definitions(**settings_groups(settings))
    result = definitions.resolve_job_def("paper_pipeline").execute_in_process(
        partition_key=source.paper_id, instance=instance
    )
    assert result.success
    assert stale_assets(instance, definitions, source.paper_id) == set()

    edit(ABSTRACT_ENGINE)
    assert stale_assets(
        instance, build_definitions(**settings_groups(settings)), source.paper_id
    ) == {"paper_abstract"}
    edit(PASSAGES_ENGINE)
    assert stale_assets(
        instance, build_definitions(**settings_groups(settings)), source.paper_id
    ) == {
        "paper_abstract",
        "question_evidence",
    }
    edit(TLDR_ENGINE)
    assert stale_assets(
        instance, build_definitions(**settings_groups(settings)), source.paper_id
    ) == {
        "paper_abstract",
        "question_evidence",
    }


def string_texts(source: str) -> str:
    return "\n".join(
        node.value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    )


def assert_read_as_parsed(source: str) -> None:
    """The quick reader finds every import a whole parse finds (none of a `TYPE_CHECKING`
    block), and more only where a string holds an import's text."""
    quick = {ast.unparse(node) for node in code_versions.import_statements(source)}
    parsed = {ast.unparse(node) for node in code_versions.parsed_import_statements(source)}
    assert parsed <= quick
    in_strings = string_texts(source)
    assert all(statement in in_strings for statement in quick - parsed)


def test_every_litpipe_module_s_imports_read_quickly_as_parsed() -> None:
    for path in sorted(code_versions.LITPIPE_ROOT.rglob("*.py")):
        assert_read_as_parsed(path.read_text(encoding="utf-8"))


IMPORT_PIECES = st.sampled_from(
    [
        "import litpipe.text\n",
        "import os, litpipe.hashing\n",
        "from litpipe.schemas import Answer\n",
        "from litpipe import text as text_helpers\n",
        "from . import sibling\n",
        "from litpipe.extractive.passages import (\n    PassageInput,\n    PassageReply,\n)\n",
        # A comment's parenthesis inside the list: not read alone, so the module is parsed.
        "from litpipe.citations import (\n    chunk_marker,  # (the marker)\n    marker,\n)\n",
        # An open parenthesis in a comment: the statement is read up to a later one, or on.
        "import litpipe.text  # (unclosed\n",
        "if TYPE_CHECKING:\n    from litpipe.retrieval.store import TextEncoder\n",
        "if TYPE_CHECKING:\n    import litpipe.llm\n\n    import litpipe.ingest\nelse:\n"
        "    import litpipe.retrieval\n",
        "def later() -> None:\n    from litpipe.retrieval.text import tokenize\n\n"
        "    tokenize('x')\n",
        '"""Use it so:\n\n    from litpipe.workflows import pipeline\n"""\n',
        # A line of prose that starts with "import": not read alone, so the module is parsed.
        '"""Say:\n\n    from litpipe.workflows import pipeline\n\nimport the module."""\n',
        "x = 'import nothing'\n",
        "class Holder:\n    import litpipe.files\n",
    ]
)


@hypothesis_settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(IMPORT_PIECES, max_size=8))
def test_any_arrangement_of_imports_reads_quickly_as_parsed(pieces: list[str]) -> None:
    assert_read_as_parsed("".join(pieces))
