"""The gate of a gated embedder swap (`litpipe backfill --embedder NEW --gate QRELS`): the home's
old and new chunk tables scored on one set of judged queries, and whether the new embedder may
become the home's default.

The set is BEIR's (a folder with queries.jsonl and qrels/<split>.tsv, as `litpipe eval
retrieval` reads it; its corpus.jsonl is not indexed: the documents are the home's papers) or
the user's own pairs, a .jsonl or .csv with a `question` and a relevant `paper` on each line (a
question on several lines has several relevant papers; other fields are ignored): those of
`litpipe ask --record` are kept in the home's `qrels.jsonl` (`record_pair`), which `--gate
recorded` names. A judged document is a paper of the home by its paper id, or by its table's own
id for the row (`external_id`: SciFact's `4983` is the paper `scifact.4983` of a table named
scifact).

Each table is scored by dense retrieval alone over the papers the backfill brought up to date,
a paper ranked by its best chunk, with `litpipe eval retrieval`'s nDCG@10 (`beir._evaluate_method`):
BM25, the other half of the hybrid search, is the same for both embedders.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from litpipe.evaluation.beir import CHUNK_CANDIDATES, BeirDataset, _evaluate_method, load_beir
from litpipe.files import exclusive_lock

if TYPE_CHECKING:
    from litpipe.retrieval.store import ChunkStore, TextEncoder

# The (question, paper) pairs `litpipe ask --record` keeps, in the home; `--gate recorded` names
# them.
RECORDED_QRELS = "qrels.jsonl"
RECORDED = "recorded"


class GateError(ValueError):
    """A qrels set that cannot gate this backfill (unreadable, or judging none of its papers)."""


class GateScore(BaseModel):
    embedder: str
    table: str
    ndcg_at_10: float
    recall_at_10: float


class EmbedderGate(BaseModel):
    """Both tables' scores on the gate's queries, and the decision."""

    qrels: str = Field(description="The set the tables were scored on.")
    queries: int = Field(description="Its queries with a relevant paper among those scored.")
    papers: int = Field(description="The papers ranked: those the backfill brought up to date.")
    method: str = "dense"
    old: GateScore = Field(description="The home's default embedder, serving until a switch.")
    new: GateScore
    margin: float = Field(description="The largest drop of nDCG@10 the switch accepts.")
    drop: float = Field(description="old nDCG@10 less new nDCG@10 (negative: the new is better).")
    passed: bool
    switched: bool = Field(description="Whether the new embedder is now the home's default.")
    decision: str = Field(description="The decision in one sentence.")


def record_pair(home: Path, question: str, paper: str) -> bool:
    """Appends (question, paper) to the home's recorded pairs, unless it is there already (the
    same question, spaced otherwise, of the same paper): asking twice judges it once. Returns
    whether it was added.

    Under the file's lock, and as one write of a whole line, so that concurrent `litpipe ask`
    processes neither record a pair twice nor interleave their lines."""
    question = _normalized(question)
    path = home / RECORDED_QRELS
    with exclusive_lock(path):
        with path.open(encoding="utf-8") as lines:
            recorded = [json.loads(line) for line in lines if line.strip()]
        if any(
            _normalized(str(row.get("question") or "")) == question and row.get("paper") == paper
            for row in recorded
        ):
            return False
        line = {
            "question": question,
            "paper": paper,
            "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        with path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(line) + "\n")
    return True


def gate_qrels(given: Path, home: Path) -> Path:
    """`--gate`'s set: the path given, or for the word `recorded` the home's recorded pairs
    (a `GateError` while there are none)."""
    if given != Path(RECORDED):
        return given
    path = home / RECORDED_QRELS
    if not path.is_file():
        raise GateError(f"no pairs recorded yet: `litpipe ask --record` records them ({path})")
    return path


def load_gate_set(path: Path, split: str = "test") -> BeirDataset:
    """The queries and their judgements: a BEIR folder, or a .jsonl/.csv of (question, paper)
    pairs. The corpus is left empty: the documents are the home's papers."""
    try:
        if path.is_dir():
            if not (path / "qrels" / f"{split}.tsv").is_file():
                raise GateError(f"{path}: no qrels/{split}.tsv (a BEIR folder, or a .jsonl/.csv)")
            beir = load_beir(path, split)
            return BeirDataset(name=path.name, corpus={}, queries=beir.queries, qrels=beir.qrels)
        if not path.is_file():
            raise GateError(f"{path}: no such file or folder")
        return _pairs(path)
    except (OSError, KeyError, json.JSONDecodeError, UnicodeDecodeError) as error:
        raise GateError(f"{path}: cannot read it as qrels: {error}") from error


def _pairs(path: Path) -> BeirDataset:
    if path.suffix == ".jsonl":
        with path.open(encoding="utf-8") as lines:
            rows = [json.loads(line) for line in lines if line.strip()]
    elif path.suffix == ".csv":
        with path.open(encoding="utf-8", newline="") as table:
            rows = list(csv.DictReader(table))
    else:
        raise GateError(f"{path}: qrels are a BEIR folder, a .jsonl or a .csv")
    queries: dict[str, str] = {}
    qrels: dict[str, dict[str, int]] = {}
    for number, row in enumerate(rows, 1):
        question = _normalized(str(row.get("question") or ""))
        paper = str(row.get("paper") or row.get("paper_id") or "").strip()
        if not question or not paper:
            raise GateError(f"{path}: line {number} needs a question and a paper")
        query_id = queries.setdefault(question, f"q{len(queries) + 1}")
        qrels.setdefault(query_id, {})[paper] = 1
    return BeirDataset(
        name=path.stem,
        corpus={},
        queries={query_id: question for question, query_id in queries.items()},
        qrels=qrels,
    )


def _normalized(question: str) -> str:
    """Spacing is not meaning: the same words are the same query (as `litpipe ask` keys them)."""
    return " ".join(question.split())


def on_papers(dataset: BeirDataset, papers: dict[str, list[str]]) -> BeirDataset:
    """The set judged on `papers` (a judged document's id, or its table's own id, to the paper
    ids it names): the queries with a relevant paper among them. Raises `GateError` when none
    is left."""
    qrels: dict[str, dict[str, int]] = {}
    for query_id, judged in dataset.qrels.items():
        relevant = {paper: grade for doc, grade in judged.items() for paper in papers.get(doc, [])}
        if relevant:
            qrels[query_id] = relevant
    if not qrels:
        count = len({paper for ids in papers.values() for paper in ids})
        raise GateError(
            f"no query of {dataset.name} has a relevant paper among the {count} papers "
            "backfilled: its judged ids must be their paper ids (as `litpipe run` prints them) "
            "or their tables' ids for the rows"
        )
    return BeirDataset(
        name=dataset.name,
        corpus={},
        queries={query_id: dataset.queries[query_id] for query_id in qrels},
        qrels=qrels,
    )


def score_table(
    dataset: BeirDataset,
    store: ChunkStore,
    embedder: TextEncoder,
    paper_ids: Iterable[str],
) -> GateScore:
    """nDCG@10 (and recall@10) of dense retrieval from `embedder`'s table over `paper_ids`."""
    where = _paper_filter(sorted(set(paper_ids)))

    def rank_chunks(query: str) -> list[str]:
        vector = embedder.encode([query])[0]
        rows = store.dense_search(embedder.embedder_id, vector, CHUNK_CANDIDATES, where)
        return [row["chunk_id"] for row in rows]

    result = _evaluate_method("dense", rank_chunks, dataset, sorted(dataset.queries))
    return GateScore(
        embedder=embedder.embedder_id,
        table=store.table_name(embedder.embedder_id),
        ndcg_at_10=round(result.ndcg_at_10, 4),
        recall_at_10=round(result.recall_at_10, 4),
    )


def decide(
    qrels: str,
    dataset: BeirDataset,
    papers: int,
    old: GateScore,
    new: GateScore,
    margin: float,
    switch: Callable[[], None],
) -> EmbedderGate:
    """Passes when the new nDCG@10 is at most `margin` below the old; then `switch` makes the
    new embedder the default."""
    drop = round(old.ndcg_at_10 - new.ndcg_at_10, 4)
    passed = drop <= margin
    if passed:
        switch()
        decision = (
            f"switched: {new.embedder} is the home's default (nDCG@10 {new.ndcg_at_10:.4f} "
            f"against {old.ndcg_at_10:.4f}, a drop of {drop:.4f} within the margin {margin})"
        )
    else:
        decision = (
            f"not switched: nDCG@10 drops by {drop:.4f} ({new.ndcg_at_10:.4f} against "
            f"{old.ndcg_at_10:.4f}), more than the margin {margin}; {old.embedder} stays the "
            f"default and {old.table} serves every query"
        )
    return EmbedderGate(
        qrels=qrels,
        queries=len(dataset.queries),
        papers=papers,
        old=old,
        new=new,
        margin=margin,
        drop=drop,
        passed=passed,
        switched=passed,
        decision=decision,
    )


def _paper_filter(paper_ids: list[str]) -> str:
    quoted = ", ".join("'" + paper_id.replace("'", "''") + "'" for paper_id in paper_ids)
    return f"paper_id IN ({quoted})"
