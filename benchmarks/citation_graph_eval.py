"""The citation graph's accuracy on the hand-checked set of the nine bundled papers, offline.

Parses `corpora/biology-cc-by`'s nine PDFs, builds each paper's references as the
`paper_references` stage does (records, contexts, intents), and scores them with
`litpipe.evaluation.citation_graph` against `litpipe_tests/data/citation_eval/` (its README
says how the set was made):

- edge matching: precision, recall and F1 of the papers `citation_graph` matches the labelled
  entries to (overall; by rule: the precision of each rule's matches, the recall of the
  entries sharing its identifier), with each miss and each wrong match named;
- marker linking: the precision of the sampled contexts' links to their entries;
- context classification: per-label precision, recall and F1, macro F1, accuracy and the
  confusion matrix of the engine's labels against the hand labels, on the sample and as
  estimated over all the contexts (each sampled context weighted by its engine label's share).

The set is held-in: the engine's rules were written on these same nine papers.

Usage: python benchmarks/citation_graph_eval.py [--set DIR] [--corpus DIR]
Prints the tables, then one JSON object as the last line. It prints no timings: this is an
accuracy evaluation.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path

from litpipe.evaluation.citation_graph import (
    MATCH_RULES,
    CitationGraphEvaluation,
    ClassificationScores,
    evaluate_citation_graph,
    read_set,
)
from litpipe.ingest.pdf import parse_pdf
from litpipe.schemas import CITATION_INTENT_LABELS, PaperReferences
from litpipe.workflows.paper_references import paper_references

ROOT = Path(__file__).resolve().parents[1]
SET = ROOT / "litpipe_tests" / "data" / "citation_eval"
CORPUS = ROOT / "corpora" / "biology-cc-by"


def shown(path: Path) -> str:
    """A path as the repository names it, where it lies inside it."""
    resolved = path.resolve()
    return str(resolved.relative_to(ROOT)) if resolved.is_relative_to(ROOT) else str(path)


def share(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def matching_table(
    evaluation: CitationGraphEvaluation, references: Mapping[str, PaperReferences]
) -> str:
    scores = evaluation.matching
    overall = scores.overall
    lines = [
        f"Edge matching: {scores.entries} labelled entries, {scores.naming_a_paper} naming a "
        "paper of the collection",
        f"precision {share(overall.precision)} ({overall.correct} of {overall.predicted} "
        f"matches), recall {share(overall.recall)} ({overall.correct} of {overall.expected}), "
        f"F1 {share(overall.f1)}",
        "rule        matched  right  precision  expected  found  recall     F1",
    ]
    for rule in MATCH_RULES:
        by = scores.by_rule[rule]
        lines.append(
            f"{rule:<11} {by.matched:7d}  {by.matched_right:5d}  {share(by.precision):>9}  "
            f"{by.expected:8d}  {by.found:5d}  {share(by.recall):>6}  {share(by.f1):>6}"
        )
    for outcome in evaluation.outcomes:
        entry = outcome.entry
        if outcome.correct or (entry.expected is None and outcome.matched is None):
            continue
        what = (
            f"matched {outcome.matched} by {outcome.rule}"
            if outcome.matched
            else f"unmatched{' (' + outcome.note + ')' if outcome.note else ''}"
        )
        record = references[entry.paper].records[entry.reference_index]
        lines.append(
            f"  {'wrong' if outcome.matched else 'miss'}: {entry.paper} entry "
            f"{entry.reference_index} ({entry.expected or 'none'}): {what}; read as "
            f"{(record.title or '')[:60]!r}, {record.year}, doi {record.doi}"
        )
    lines.append(f"matches of entries the set does not label: {len(evaluation.unlabelled_matches)}")
    lines.extend(
        f"  {item.paper} entry {item.reference_index} -> {item.matched}: {item.raw[:70]}"
        for item in evaluation.unlabelled_matches
    )
    return "\n".join(lines)


def classification_table(title: str, scores: ClassificationScores, counts: bool) -> str:
    lines = [
        title,
        "label        precision  recall      F1  hand  engine",
    ]
    for label in CITATION_INTENT_LABELS:
        by = scores.labels[label]
        lines.append(
            f"{label:<12} {share(by.precision):>9}  {share(by.recall):>6}  {share(by.f1):>6}  "
            f"{by.support:4d}  {by.predicted:6d}"
        )
    lines.append(f"macro F1 {share(scores.macro_f1)}, accuracy {share(scores.accuracy)}")
    lines.append("confusion (rows: hand label; columns: engine label)")
    lines.append(" " * 12 + "".join(f"{label:>11}" for label in CITATION_INTENT_LABELS))
    for gold in CITATION_INTENT_LABELS:
        row = scores.confusion[gold]
        cells = "".join(
            f"{row[label]:11.0f}" if counts else f"{row[label]:11.1f}"
            for label in CITATION_INTENT_LABELS
        )
        lines.append(f"{gold:<12}{cells}")
    return "\n".join(lines)


def figures(scores: ClassificationScores) -> dict[str, object]:
    return {
        "labels": {
            label: {
                "precision": rounded(by.precision),
                "recall": rounded(by.recall),
                "f1": rounded(by.f1),
                "hand": by.support,
                "engine": by.predicted,
            }
            for label, by in scores.labels.items()
        },
        "macro_f1": rounded(scores.macro_f1),
        "accuracy": rounded(scores.accuracy),
        "contexts": scores.contexts,
        "confusion": {
            gold: {label: round(count, 1) for label, count in row.items()}
            for gold, row in scores.confusion.items()
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", type=Path, default=SET, help="the hand-checked set's folder")
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="the nine bundled PDFs")
    args = parser.parse_args(argv)
    references = {
        pdf.stem: paper_references(parse_pdf(pdf, pdf.stem))
        for pdf in sorted(args.corpus.glob("*.pdf"))
    }
    evaluation = evaluate_citation_graph(read_set(args.set), references)
    linking = evaluation.linking
    sample, estimated = evaluation.classification_sample, evaluation.classification_estimated
    population = evaluation.contexts_by_engine_label
    sampled = evaluation.sampled_by_engine_label
    strata = ", ".join(
        f"{label} {sampled.get(label, 0)} of {population[label]}" for label in sorted(population)
    )
    print(
        f"Citation graph on {len(references)} papers of {shown(args.corpus)}, set {shown(args.set)}"
    )
    print(f"\n{matching_table(evaluation, references)}")
    print(
        f"\nMarker linking: precision {share(linking.precision)} ({linking.right} of "
        f"{linking.right + linking.wrong + linking.not_a_citation} sampled contexts; "
        f"{linking.wrong} linked to another entry, {linking.not_a_citation} citing nothing)"
    )
    print(f"\nSampled contexts by the engine's label: {strata}")
    print(
        "\n"
        + classification_table(
            f"Context classification, on the sample ({sample.contexts} contexts citing something)",
            sample,
            counts=True,
        )
    )
    print(
        f"accuracy on the {evaluation.sure_contexts} contexts labelled without doubt: "
        f"{share(evaluation.accuracy_sure)}"
    )
    print(
        "\n"
        + classification_table(
            f"Context classification, estimated over all {sum(population.values())} contexts "
            "(hand and engine columns: sample counts)",
            estimated,
            counts=False,
        )
    )
    overall = evaluation.matching.overall
    print(
        json.dumps(
            {
                "benchmark": "citation_graph_eval",
                "papers": len(references),
                "matching": {
                    "entries": evaluation.matching.entries,
                    "naming_a_paper": evaluation.matching.naming_a_paper,
                    "matches": overall.predicted,
                    "correct": overall.correct,
                    "precision": rounded(overall.precision),
                    "recall": rounded(overall.recall),
                    "f1": rounded(overall.f1),
                    "by_rule": {
                        rule: {
                            "matched": by.matched,
                            "right": by.matched_right,
                            "precision": rounded(by.precision),
                            "expected": by.expected,
                            "found": by.found,
                            "recall": rounded(by.recall),
                            "f1": rounded(by.f1),
                        }
                        for rule, by in evaluation.matching.by_rule.items()
                    },
                    "unlabelled_matches": len(evaluation.unlabelled_matches),
                },
                "linking": linking.model_dump(),
                "classification_sample": figures(sample),
                "classification_estimated": figures(estimated),
                "accuracy_sure": rounded(evaluation.accuracy_sure),
                "sure_contexts": evaluation.sure_contexts,
                "contexts_by_engine_label": population,
                "sampled_by_engine_label": sampled,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
