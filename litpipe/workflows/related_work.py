"""LitLLM related-work generation, one request end to end, without Dagster.

    table = load_references(Path("refs.csv"))
    request = make_request("We propose ...", settings.related_work, top_k=5)
    related = run_related_work(
        table,
        request,
        settings.related_work,
        settings.ingest,
        settings.retrieval,
        settings.paths,
        Asker(settings.llm),
    )
    write_related_work(related, Path("out"))  # litpipe.report.related_work

1. The reference table (CSV or JSONL with `id`, `title`, `abstract`, read as the ingest reads
   abstract tables): a bad row is left out with its reason; a table that cannot be read or lacks
   a column, a top-k larger than the table or an idea longer than the writer's context is
   refused before anything runs (`RelatedWorkInputError`).
2. Hybrid retrieval over the abstracts, in memory (a few hundred abstracts need no store;
   `litpipe.retrieval.abstract_index`): BM25
   over title and abstract, dense search with the configured embedder (an abstract longer than
   the embedder's window is split into windows and scored by its best, as the BEIR evaluation
   scores documents by their best chunk), Reciprocal Rank Fusion, for the idea and for each
   search query the `search_queries` agent writes from it (`related_work.search_queries`; the
   rankings fused again by RRF), then MMR down to `related_work.candidates`.
3. Debate scoring of every candidate by the `debate` agent, as one batch through the client, so
   that `llm.concurrency` bounds the calls in flight (offline: the debate engine's probability
   from the idea's terms in the abstract). Quotes that are not the abstract's words are dropped.
4. The top-k by probability (ties: retrieval order) go to the `related_work` writer
   (`write_section`), with a sentence plan to write to when `related_work.plan` asks for one
   (`sentence_plan`), whose section is checked by the agent's rules (`review`, as
   `litpipe/agents/related_work.py` says) and fixed here (`settle`).
"""

from __future__ import annotations

import inspect
import logging
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from litpipe.agents.asker import Asker
from litpipe.agents.base import (
    fitted_messages,
)
from litpipe.agents.question_evidence.debate import DebateAgent, verbatim_quotes
from litpipe.agents.related_work import REVISION_REQUEST, RelatedWorkAgent, review
from litpipe.agents.related_work_plan import (
    AUTO_PLAN,
    NO_PLAN,
    RelatedWorkPlanAgent,
    plan_text,
)
from litpipe.agents.search_queries import SearchQueriesAgent, usable_queries
from litpipe.extractive.debate import DebateReply
from litpipe.extractive.passages import PassageInput
from litpipe.extractive.related_work import (
    PARAGRAPH_BREAK,
    UNCITABLE_ID_CHARACTERS,
    RelatedWorkInput,
    RelatedWorkReply,
    cited_ids,
    closest_sentence,
    joined,
    paragraphs,
    terms_of,
    without_citations,
)
from litpipe.extractive.search_queries import SearchQueriesInput
from litpipe.hashing import digest
from litpipe.ingest import structured_abstracts
from litpipe.ingest.tables import read_table
from litpipe.llm.errors import (
    ContextOverflowError,
    ModelUnreachableError,
    ReplyValidationError,
    one_line,
)
from litpipe.report import notices
from litpipe.report import related_work as related_work_files
from litpipe.report.related_work import write_related_work
from litpipe.retrieval import abstract_index as abstract_index_module
from litpipe.retrieval.abstract_index import AbstractEncoder, AbstractIndex
from litpipe.schemas import (
    DebateVerdict,
    Reference,
    RelatedWork,
    RelatedWorkRequest,
    RetrievedReference,
    ScoredReference,
)
from litpipe.settings import (
    HomePaths,
    IngestSettings,
    RelatedWorkSettings,
    RetrievalSettings,
)
from litpipe.text import estimate_tokens
from litpipe.validation import validation_problems

log = logging.getLogger(__name__)

# What `read_table` names the rows' papers: only its ids' uniqueness matters here.
_TABLE_COLLECTION = "related-work"
# Under LITPIPE_HOME: the abstracts' vectors, per table and embedder.
VECTORS_DIR = Path("related_work") / "vectors"
# A Markdown heading line: a section has none (the document around it has its own).
_HEADING = re.compile(r"^[ \t]*#{1,6}[ \t].*$", re.M)


class RelatedWorkInputError(ValueError):
    """A request that cannot be served as given; the message says what to change."""


@dataclass
class ReferenceTable:
    """The usable rows of a reference table, and the rows left out with their reasons; or a
    collection's ingested papers (`collection`), and the papers left out."""

    path: Path
    references: list[Reference]
    skipped: list[str] = field(default_factory=list)
    collection: str | None = None


def load_references(path: Path) -> ReferenceTable:
    """The table's references: a bad row is left out (and said why); a table that cannot be
    read, lacks a required column or has no usable row raises `RelatedWorkInputError`."""
    path = Path(path)
    if not path.is_file():
        raise RelatedWorkInputError(f"{path}: no such file (a reference table is .csv or .jsonl)")
    try:
        sources, failed = read_table(path, _TABLE_COLLECTION)
    except ValueError as error:
        raise RelatedWorkInputError(str(error)) from error
    whole_file = [failure for failure in failed if failure.row is None]
    if whole_file:
        raise RelatedWorkInputError(
            f"{path}: {whole_file[0].reason} (a reference table needs the columns id, title, "
            "abstract)"
        )
    skipped = [f"row {failure.row}: {failure.reason}" for failure in failed]
    references = []
    for source in sources:
        reference_id = source.external_id or ""
        uncitable = sorted({c for c in reference_id if c in UNCITABLE_ID_CHARACTERS})
        if uncitable:
            # Cited as [id]: an id holding a bracket, comma or semicolon could not be read back.
            skipped.append(
                f"row {source.row_number}: id {reference_id!r} holds {' '.join(uncitable)!r}, "
                "which a citation [id] cannot hold"
            )
            continue
        references.append(
            Reference(
                id=reference_id,
                title=" ".join(source.fields["title"].split()),
                abstract=structured_abstracts.without_part_labels(
                    source.fields["abstract"].strip()
                ),
            )
        )
    for reason in skipped:
        log.warning("%s: left out %s", path, reason)
    if not references:
        raise RelatedWorkInputError(f"{path}: no usable reference ({'; '.join(skipped)})")
    return ReferenceTable(path=path, references=references, skipped=skipped)


def make_request(
    idea: str,
    related_work: RelatedWorkSettings,
    sentences: int | None = None,
    words: int | None = None,
    top_k: int | None = None,
) -> RelatedWorkRequest:
    """A request for `idea`, each limit given or else the settings' default;
    `RelatedWorkInputError` for an empty idea or a limit below 1."""
    if not idea.strip():
        raise RelatedWorkInputError("the research idea is empty: describe the idea to motivate")
    try:
        return RelatedWorkRequest(
            idea=idea.strip(),
            sentences=sentences if sentences is not None else related_work.sentences,
            words=words if words is not None else related_work.words,
            top_k=top_k if top_k is not None else related_work.top_k,
        )
    except ValidationError as error:
        raise RelatedWorkInputError(f"bad request: {validation_problems(error)}") from None


def check_request(
    request: RelatedWorkRequest, table: ReferenceTable, related_work: RelatedWorkSettings
) -> None:
    """Raise `RelatedWorkInputError` for what no run could serve: a top-k larger than the
    table, an idea that does not fit the writer's context."""
    problems = []
    usable = len(table.references)
    if request.top_k > usable and table.collection is not None:
        problems.append(
            f"top_k {request.top_k} is larger than collection {table.collection!r}'s {usable} "
            f"ingested papers: ask for at most {usable}"
        )
    elif request.top_k > usable:
        problems.append(
            f"top_k {request.top_k} is larger than the table's {usable} usable "
            f"references ({table.path}): ask for at most {usable}"
        )
    idea_tokens = estimate_tokens(request.idea)
    if idea_tokens > related_work.context_tokens:
        problems.append(
            f"the research idea is about {idea_tokens} tokens, longer than the writer's context "
            f"(related_work.context_tokens = {related_work.context_tokens}): shorten "
            "the idea to its problem, approach and contribution"
        )
    if problems:
        raise RelatedWorkInputError("; ".join(problems))


def check_writer_context(
    inputs: RelatedWorkInput, related_work: RelatedWorkSettings, asker: Asker
) -> None:
    """Raise `RelatedWorkInputError` when a model writer's prompt (the idea and the top-k
    abstracts) would not fit its context; the offline engine has no context to fit."""
    agent = RelatedWorkAgent()
    if asker.offline(agent):
        return
    tokens = sum(estimate_tokens(m["content"]) for m in agent.messages(inputs, asker.prompts))
    if tokens > related_work.context_tokens:
        raise RelatedWorkInputError(
            f"the writer's prompt (the idea and {len(inputs.references)} abstracts) is about "
            f"{tokens} tokens, more than its context (related_work.context_tokens = "
            f"{related_work.context_tokens}): lower top_k or raise the setting"
        )


def debate_passage(reference: Reference) -> str:
    """What the debate agent reads of a reference: its title, then its abstract (and passage)."""
    return f"{reference.title}\n\n{reference.text()}"


def score_references(
    idea: str,
    candidates: list[RetrievedReference],
    asker: Asker,
) -> list[ScoredReference]:
    """Each candidate with the debate agent's verdict on it, in the candidates' order: one
    batch, so at most `llm.concurrency` calls are in flight."""
    asked = [
        PassageInput(
            query=idea, passage_id=found.reference.id, passage=debate_passage(found.reference)
        )
        for found in candidates
    ]
    replies: list[DebateReply] = asker.ask_each(DebateAgent(), asked)
    return [
        ScoredReference(
            **found.model_dump(),
            verdict=DebateVerdict(**verbatim_quotes(reply, one.passage).model_dump()),
        )
        for found, one, reply in zip(candidates, asked, replies, strict=True)
    ]


def generated_queries(idea: str, related_work: RelatedWorkSettings, asker: Asker) -> list[str]:
    """The `search_queries` agent's queries for `idea` that can be searched (none when the
    setting asks for none)."""
    count = related_work.search_queries
    if count == 0:
        return []
    inputs = SearchQueriesInput(idea=idea, count=count)
    reply = asker.ask(SearchQueriesAgent(), inputs)
    return usable_queries(reply, inputs)


def sentence_plan(
    inputs: RelatedWorkInput,
    related_work: RelatedWorkSettings,
    asker: Asker,
) -> tuple[str, list[str]]:
    """The plan the writer is to write to, as `related_work.plan` asks, and a warning when a
    plan is asked of the offline writer, which writes extractively and follows none (`auto`
    then writes no plan: nothing would read it)."""
    asked = related_work.plan
    if asked == NO_PLAN:
        return "", []
    if asker.offline(RelatedWorkAgent()):
        if asked == AUTO_PLAN:
            return "", []
        warning = "the offline writer follows no plan: related_work.plan is not used"
        log.warning("related_work (offline): %s", warning)
        return "", [warning]
    if asked != AUTO_PLAN:
        return asked, []
    reply = asker.ask(RelatedWorkPlanAgent(), inputs)
    return plan_text(reply), []


def top_references(scored: list[ScoredReference], k: int) -> list[ScoredReference]:
    """The `k` most probably relevant, best first; a tie goes to the better retrieved."""
    return sorted(scored, key=lambda s: (-s.verdict.probability, s.retrieval_rank))[:k]


def abstract_index(
    references: list[Reference],
    embedder: AbstractEncoder,
    ingest: IngestSettings,
    retrieval: RetrievalSettings,
    vectors_dir: Path | None = None,
) -> AbstractIndex:
    """The in-memory search over `references`, chunked as `ingest` and fused as `retrieval`
    say."""
    return AbstractIndex(
        references,
        embedder,
        chunk_tokens=ingest.chunk_tokens,
        overlap_tokens=ingest.chunk_overlap_tokens,
        rrf_k=retrieval.rrf_k,
        mmr_lambda=retrieval.mmr_lambda,
        vectors_dir=vectors_dir,
    )


def load_embedder(ingest: IngestSettings, paths: HomePaths) -> AbstractEncoder:
    # Imported here: sentence-transformers costs seconds, and bad input needs no model.
    from litpipe.workflows.ingest import settings_embedder

    return settings_embedder(ingest, paths)


# The writer's step: the section from the offline engine or the model (one revision request
# when its reply breaks a rule), then fixed without a model to keep the rules.


class WrittenSection(BaseModel):
    """The section as kept, and what was done to it to keep the rules."""

    text: str
    cited_ids: list[str]
    sentences: int
    words: int
    within_length: bool
    revised: bool = False
    dropped_citations: list[str] = Field(default_factory=list)
    added_citations: list[str] = Field(default_factory=list)
    trimmed_sentences: int = 0
    warnings: list[str] = Field(default_factory=list)


def _without_headings(text: str) -> str:
    """The section without Markdown heading lines: the document around it has its own."""
    return PARAGRAPH_BREAK.sub("\n\n", _HEADING.sub("", text)).strip()


def _with_missing(text: str, inputs: RelatedWorkInput, missing: list[str]) -> tuple[str, list[str]]:
    """A sentence for each reference left uncited, its abstract's sentence closest to the idea,
    placed before the closing sentence when that one cites nothing (it motivates the idea)."""
    idea_terms = terms_of(inputs.idea)
    by_id = {scored.reference.id: scored for scored in inputs.references}
    added = [closest_sentence(by_id[i], idea_terms) for i in missing]
    parts = paragraphs(text) or [[]]
    last = parts[-1]
    if last and not cited_ids(last[-1]):
        last[-1:-1] = added
    else:
        last.extend(added)
    return joined(parts), added


def _trimmed(text: str, inputs: RelatedWorkInput) -> tuple[str, int]:
    """Whole sentences removed until the section fits: from the end, the closing sentence
    last, never one holding the only citation of a reference."""
    parts = paragraphs(text)
    places = [(p, s) for p, paragraph in enumerate(parts) for s in range(len(paragraph))]
    order = [*reversed(places[:-1]), *places[-1:]]
    removed: set[tuple[int, int]] = set()

    def kept_text() -> str:
        return joined(
            [
                [s for i, s in enumerate(paragraph) if (p, i) not in removed]
                for p, paragraph in enumerate(parts)
            ]
        )

    for place in order:
        current = kept_text()
        if review(current, inputs.ids, inputs.sentences, inputs.words).within_length:
            break
        removed.add(place)
        if review(kept_text(), inputs.ids, inputs.sentences, inputs.words).missing:
            removed.discard(place)
    return kept_text(), len(removed)


def settle(
    text: str, inputs: RelatedWorkInput, writer: str, revised: bool = False
) -> WrittenSection:
    """The section made to keep the rules without a model: invented citations removed, missing
    references added, whole sentences trimmed to the length; each fix logged and recorded."""
    warnings: list[str] = []

    def warn(message: str) -> None:
        log.warning("%s: %s", writer, message)
        warnings.append(message)

    text = _without_headings(text)
    found = review(text, inputs.ids, inputs.sentences, inputs.words)
    if found.unknown:
        warn(f"removed citations of ids not supplied: {', '.join(found.unknown)}")
        text = without_citations(text, found.unknown)
    added: list[str] = []
    if found.missing:
        text, sentences_added = _with_missing(text, inputs, found.missing)
        added = found.missing
        warn(
            f"references {', '.join(added)} were uncited; added a sentence from each abstract "
            f"({' '.join(sentences_added)})"
        )
    trimmed = 0
    if not review(text, inputs.ids, inputs.sentences, inputs.words).within_length:
        text, trimmed = _trimmed(text, inputs)
        if trimmed:
            warn(f"removed {trimmed} sentence(s) to meet the length")
    final = review(text, inputs.ids, inputs.sentences, inputs.words)
    if not final.within_length:
        warn(
            f"the section has {final.sentences} sentences and {final.words} words, more than "
            f"the {inputs.sentences} sentences and {inputs.words} words asked: every reference "
            "must be cited, and sentences are not cut in the middle"
        )
    return WrittenSection(
        text=text,
        cited_ids=cited_ids(text),
        sentences=final.sentences,
        words=final.words,
        within_length=final.within_length,
        revised=revised,
        dropped_citations=found.unknown,
        added_citations=added,
        trimmed_sentences=trimmed,
        warnings=warnings,
    )


def write_section(inputs: RelatedWorkInput, asker: Asker) -> WrittenSection:
    """The section for `inputs`: from the offline engine, or from the model with one revision
    request when its first reply breaks a rule; then `settle`d either way."""
    agent = RelatedWorkAgent()
    route = asker.route(agent)
    if route.offline:
        return settle(agent.offline(inputs).text, inputs, "related_work (offline)")
    reply = asker.ask(agent, inputs)
    engine = asker.engine(agent)
    if engine != route.model:  # the offline engine wrote it in the model's place
        return settle(reply.text, inputs, f"related_work ({engine})")
    first = review(_without_headings(reply.text), inputs.ids, inputs.sentences, inputs.words)
    if first.ok:
        return settle(reply.text, inputs, f"related_work ({route.model})")
    problems = "; ".join(first.problems(inputs.ids))
    log.warning("related_work (%s): asking for one revision: %s", route.model, problems)
    client = asker.client
    assert client is not None  # asker.ask asked it
    revision = [
        *fitted_messages(agent, inputs, asker.prompts, client, route),
        {"role": "assistant", "content": reply.model_dump_json()},
        {"role": "user", "content": REVISION_REQUEST.format(problems=problems)},
    ]
    try:
        revised = client.complete_sync(route, revision, RelatedWorkReply)
    except (ReplyValidationError, ContextOverflowError, ModelUnreachableError) as error:
        log.warning(
            "related_work (%s): the revision is unusable, the first reply stands: %s",
            route.model,
            one_line(str(error), 200),
        )
        return settle(reply.text, inputs, f"related_work ({route.model})")
    return settle(revised.text, inputs, f"related_work ({route.model})", revised=True)


def run_related_work(
    table: ReferenceTable | Path,
    request: RelatedWorkRequest,
    related_work: RelatedWorkSettings,
    ingest: IngestSettings,
    retrieval: RetrievalSettings,
    paths: HomePaths,
    asker: Asker,
    embedder: AbstractEncoder | None = None,
    index: AbstractIndex | None = None,
) -> RelatedWork:
    """One request end to end: retrieve, debate, keep the top-k, write, check. `embedder`
    defaults to the one `ingest` names; `index`, the table's, built once for many requests over
    one table (an evaluation's); the abstracts' vectors are kept under the home (`paths`)."""
    if not isinstance(table, ReferenceTable):
        table = load_references(Path(table))
    check_request(request, table, related_work)
    if index is None:
        index = abstract_index(
            table.references,
            embedder if embedder is not None else load_embedder(ingest, paths),
            ingest,
            retrieval,
            vectors_dir=paths.home / VECTORS_DIR,
        )
    limit = min(len(index), max(related_work.candidates, request.top_k))
    queries = generated_queries(request.idea, related_work, asker)
    found = index.search(request.idea, limit, max(retrieval.candidates, limit), queries)
    scored = score_references(request.idea, found, asker)
    best = top_references(scored, request.top_k)
    inputs = RelatedWorkInput(
        idea=request.idea, references=best, sentences=request.sentences, words=request.words
    )
    check_writer_context(inputs, related_work, asker)
    plan, plan_warnings = sentence_plan(inputs, related_work, asker)
    if plan:
        inputs = inputs.model_copy(update={"plan": plan})
        check_writer_context(inputs, related_work, asker)
    section = write_section(inputs, asker)
    return RelatedWork(
        request=request,
        engine=asker.engine(RelatedWorkAgent.name),
        debate_engine=asker.engine(DebateAgent.name),
        text=section.text,
        cited_ids=section.cited_ids,
        references=best,
        candidates=scored,
        search_queries=queries,
        plan=plan,
        table_rows=len(table.references),
        skipped_rows=table.skipped,
        sentences=section.sentences,
        words=section.words,
        within_length=section.within_length,
        revised=section.revised,
        dropped_citations=section.dropped_citations,
        added_citations=section.added_citations,
        trimmed_sentences=section.trimmed_sentences,
        warnings=plan_warnings + section.warnings,
    )


def generate_related_work(
    table_path: Path,
    request: RelatedWorkRequest,
    related_work: RelatedWorkSettings,
    ingest: IngestSettings,
    retrieval: RetrievalSettings,
    paths: HomePaths,
    asker: Asker,
    folder: Path,
    embedder: AbstractEncoder | None = None,
) -> tuple[RelatedWork, dict[str, Path]]:
    """`run_related_work`, then its files: bad input raises before anything is written."""
    related = run_related_work(
        table_path, request, related_work, ingest, retrieval, paths, asker, embedder
    )
    return related, write_related_work(related, folder)


def related_work_version(
    related_work: RelatedWorkSettings,
    ingest: IngestSettings,
    retrieval: RetrievalSettings,
    asker: Asker,
) -> str:
    """Hash of what decides a section besides its inputs: its agents (prompt, schema, code,
    route), this module, the reading of structured abstracts and the notice its files carry,
    and the retrieval and length
    settings. Not the embedder, whose version (its model files) its asset's code version
    takes."""
    return digest(
        asker.version(SearchQueriesAgent()),
        asker.version(DebateAgent()),
        asker.version(RelatedWorkPlanAgent()),
        asker.version(RelatedWorkAgent()),
        inspect.getsource(sys.modules[__name__]),
        inspect.getsource(abstract_index_module),
        inspect.getsource(related_work_files),
        inspect.getsource(structured_abstracts),
        inspect.getsource(notices),
        str(ingest.chunk_tokens),
        str(ingest.chunk_overlap_tokens),
        str(retrieval.candidates),
        str(related_work.candidates),
        str(retrieval.rrf_k),
        str(retrieval.mmr_lambda),
        str(related_work.search_queries),
        related_work.plan,
    )
