"""Calibrates the offline support score on real pairs, and says how well it separates them.

The labelled set comes from SciTLDR-A (Apache-2.0, `../shared/data/scitldr/`): each sampled
paper's gold TL;DRs (one-sentence summaries its authors or reviewers wrote, so paraphrases, not
copies) and one sentence of its abstract (a detail, as a synthesis quotes it) against

- its own abstract: supported;
- the abstract of another paper of the 618 that holds the largest share of the TL;DR's terms
  (a hard negative: same field, same words, another paper): not supported;
- a random other paper's abstract: not supported.

Papers are split in half, train and test, by paper, so no sentence or passage of the test half is
seen while fitting. On the train half each method's threshold (and the combination's lexical
weight) is the one with the best accuracy; the test half reports accuracy and ROC-AUC:

- lexical: today's term-coverage share;
- semantic: the MiniLM cosine of the sentence with the passage;
- combined: their weighted mean (`litpipe.retrieval.support.combined`).

Usage: python benchmarks/support_calibration.py [--data DIR] [--papers N] [--write]
`--write` rewrites litpipe_tests/data/support_pairs.jsonl (the tests' copy of the set).
Prints readable lines, then one JSON object as the last line.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import sys
from collections.abc import Sequence
from itertools import pairwise
from pathlib import Path

from pydantic import BaseModel

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from litpipe.retrieval.embedder import Embedder  # noqa: E402
from litpipe.retrieval.rerank import term_coverage  # noqa: E402
from litpipe.retrieval.support import combined, support_scores  # noqa: E402
from litpipe.text import sentences  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "scitldr" / "scitldr_a_test_titles_abstracts.csv"
PAIRS = ROOT / "litpipe_tests" / "data" / "support_pairs.jsonl"
SEED = 8
WEIGHTS = [step / 20 for step in range(21)]


class SupportPair(BaseModel):
    """One labelled (sentence, passage) pair, as stored for the tests."""

    split: str  # "train" or "test"
    kind: str  # "own" (supported), "hard" or "random" (mismatched)
    paper_id: str
    passage_id: str
    sentence: str
    passage: str
    supported: bool


class Scored(BaseModel):
    pair: SupportPair
    lexical: float
    semantic: float


def build_pairs(table: Path, papers: int) -> list[SupportPair]:
    with table.open(encoding="utf-8", newline="") as handle:
        rows = [row for row in csv.DictReader(handle) if row["abstract"].strip()]
    rng = random.Random(SEED)
    sampled = rng.sample(rows, papers)
    pairs: list[SupportPair] = []
    for index, row in enumerate(sampled):
        split = "train" if index < papers // 2 else "test"
        tldrs = list(dict.fromkeys(t.strip() for t in row["tldrs_all"].split("|||") if t.strip()))
        first, second = tldrs[0], tldrs[1] if len(tldrs) > 1 else tldrs[0]
        others = [other for other in rows if other["id"] != row["id"]]
        # A detail rather than a summary: the support check mostly grades such sentences.
        detail = rng.choice(
            [s.text for s in sentences(row["abstract"]) if len(s.text.split()) >= 8]
            or [row["abstract"]]
        )
        hard = _closest(first, others)
        random_other = rng.choice([other for other in others if other["id"] != hard["id"]])
        for kind, sentence, passage in (
            ("own", first, row),
            ("hard", first, hard),
            ("own", second, row),
            ("random", second, random_other),
            ("own", detail, row),
            ("hard", detail, _closest(detail, others)),
        ):
            pairs.append(
                SupportPair(
                    split=split,
                    kind=kind,
                    paper_id=row["id"],
                    passage_id=passage["id"],
                    sentence=sentence,
                    passage=passage["abstract"],
                    supported=kind == "own",
                )
            )
    return pairs


def _closest(sentence: str, others: Sequence[dict[str, str]]) -> dict[str, str]:
    """The other paper whose abstract holds most of the sentence's terms: what a retriever
    would have put next to the right passage."""
    return max(others, key=lambda other: term_coverage(sentence, other["abstract"]).share)


def scored(pairs: Sequence[SupportPair], embedder: Embedder) -> list[Scored]:
    scores = support_scores([(p.sentence, [p.passage]) for p in pairs], embedder)
    return [
        Scored(pair=pair, lexical=score.lexical, semantic=score.semantic or 0.0)
        for pair, score in zip(pairs, scores, strict=True)
    ]


def accuracy(values: Sequence[float], labels: Sequence[bool], threshold: float) -> float:
    return sum((v >= threshold) == label for v, label in zip(values, labels, strict=True)) / len(
        values
    )


def best_threshold(values: Sequence[float], labels: Sequence[bool]) -> float:
    """The threshold with the best accuracy: the midpoint between two neighbouring scores, so
    it does not sit on a training example."""
    ordered = sorted(set(values))
    candidates = [(a + b) / 2 for a, b in pairwise(ordered)] or ordered
    return round(max(candidates, key=lambda t: (accuracy(values, labels, t), -abs(t - 0.5))), 3)


def roc_auc(values: Sequence[float], labels: Sequence[bool]) -> float:
    """The chance that a supported pair scores above a mismatched one (ties count half)."""
    positives = [v for v, label in zip(values, labels, strict=True) if label]
    negatives = [v for v, label in zip(values, labels, strict=True) if not label]
    wins = sum((p > n) + 0.5 * (p == n) for p in positives for n in negatives)
    return wins / (len(positives) * len(negatives))


def report(
    name: str, test: Sequence[Scored], values: Sequence[float], threshold: float
) -> dict[str, float]:
    labels = [s.pair.supported for s in test]
    figures = {
        "threshold": threshold,
        "accuracy": round(accuracy(values, labels, threshold), 3),
        "roc_auc": round(roc_auc(values, labels), 3),
    }
    for kind in ("hard", "random"):
        # Own pairs against one kind of negative: how each method fares on the hard ones.
        chosen = [i for i, s in enumerate(test) if s.pair.kind in ("own", kind)]
        kind_values = [values[i] for i in chosen]
        kind_labels = [labels[i] for i in chosen]
        figures[f"accuracy_{kind}"] = round(accuracy(kind_values, kind_labels, threshold), 3)
        figures[f"roc_auc_{kind}"] = round(roc_auc(kind_values, kind_labels), 3)
    print(
        f"{name:9} threshold {threshold:.3f}  accuracy {figures['accuracy']:.3f}  "
        f"AUC {figures['roc_auc']:.3f}  (vs hard: acc {figures['accuracy_hard']:.3f}, "
        f"vs random: acc {figures['accuracy_random']:.3f})"
    )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--papers", type=int, default=80)
    parser.add_argument("--write", action="store_true", help=f"rewrite {PAIRS.name}")
    args = parser.parse_args()

    pairs = build_pairs(args.data, args.papers)
    if args.write:
        PAIRS.write_text("".join(pair.model_dump_json() + "\n" for pair in pairs), encoding="utf-8")
    embedder = Embedder("all-MiniLM-L6-v2")
    every = scored(pairs, embedder)
    train = [s for s in every if s.pair.split == "train"]
    test = [s for s in every if s.pair.split == "test"]
    labels = [s.pair.supported for s in train]
    print(f"{len(pairs)} pairs ({len(train)} train, {len(test)} test) from {args.data.name}")

    def mixed(points: Sequence[Scored], weight: float) -> list[float]:
        return [combined(s.lexical, s.semantic, weight) for s in points]

    # The weight with the best train AUC: on a few hundred pairs the best accuracy jumps from
    # weight to weight, the AUC (every threshold at once) changes smoothly.
    weight = max(WEIGHTS, key=lambda w: roc_auc(mixed(train, w), labels))
    lexical_threshold = best_threshold([s.lexical for s in train], labels)
    semantic_threshold = best_threshold([s.semantic for s in train], labels)
    combined_threshold = best_threshold(mixed(train, weight), labels)
    print(f"lexical weight of the combination (fit on train): {weight}")
    print("held-out (test) figures:")
    figures = {
        "pairs": len(pairs),
        "train": len(train),
        "test": len(test),
        "lexical_weight": weight,
        "lexical": report("lexical", test, [s.lexical for s in test], lexical_threshold),
        "semantic": report("semantic", test, [s.semantic for s in test], semantic_threshold),
        "combined": report("combined", test, mixed(test, weight), combined_threshold),
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
