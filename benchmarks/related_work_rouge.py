"""ROUGE of the offline related-work writer against lead, LexRank and TextRank, split in two.

Runs `litpipe.evaluation.related_work.evaluate_related_work` (what `litpipe eval related-work`
runs) once, offline, on every example of the dataset, and reports each system's mean ROUGE-1,
ROUGE-2 and ROUGE-L F (in percent) on three slices of that one run: dev (the first half in the
dataset's order: examples 0-24 of the 50-example sample, the only ones the writer's offline
engine was tuned on), held-out (the second half) and all. Every system writes under the same
budget, the gold paragraph's word count, in whole sentences.

The acceptance point it checks, on all examples: litpipe beats lead and is at least level with
TextRank on all three metrics (`beats_lead`, `level_with_textrank`); also per slice.

With 25 or 50 examples the means are noisy: each slice also prints litpipe's ROUGE-L lead over
TextRank with a 95% paired bootstrap interval (10,000 resamples of the examples, seed 0) and
the examples litpipe wins, so a reader sees how far a difference is from chance.

Two litpipe rows: `litpipe`, the writer given the example's cited references, and
`litpipe_ranked`, the writer given the top k it retrieved and ranked from the pool of every
example's cited abstracts (k the example's cited count), with that path's recall (the share of
the cited references among the k) per slice.

Usage: python benchmarks/related_work_rouge.py [DATASET] [--home DIR]
DATASET is a JSONL file or a folder holding one (default ../shared/data/citebench-related-work).
Prints the tables, then one JSON object as the last line. These are figures, not timings.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

from litpipe.evaluation.related_work import (
    RANKED,
    SYSTEMS,
    ExampleResult,
    evaluate_related_work,
)
from litpipe.evaluation.rouge import ROUGE_TYPES, Scores, mean_scores
from litpipe.settings import Settings
from litpipe.settings.groups import settings_groups

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "citebench-related-work"


def slice_means(results: list[ExampleResult]) -> dict[str, Scores]:
    return {name: mean_scores([r.scores[name] for r in results]) for name in SYSTEMS}


def verdicts(means: dict[str, Scores]) -> dict[str, bool]:
    """litpipe above lead on every metric, and not below TextRank on any."""
    ours = means["litpipe"]
    return {
        "beats_lead": all(getattr(ours, m) > getattr(means["lead"], m) for m in ROUGE_TYPES),
        "level_with_textrank": all(
            getattr(ours, m) >= getattr(means["textrank"], m) for m in ROUGE_TYPES
        ),
    }


def lead_over_textrank(results: list[ExampleResult]) -> dict[str, float]:
    """litpipe's ROUGE-L minus TextRank's (points): the mean over the examples, its 95% paired
    bootstrap interval, and how many examples litpipe wins."""
    differences = np.array(
        [100 * (r.scores["litpipe"].rougeL - r.scores["textrank"].rougeL) for r in results]
    )
    draws = np.random.default_rng(0).choice(differences, (10_000, len(differences)))
    low, high = np.percentile(draws.mean(axis=1), [2.5, 97.5])
    return {
        "mean": round(float(differences.mean()), 2),
        "ci95_low": round(float(low), 2),
        "ci95_high": round(float(high), 2),
        "wins": int((differences > 0).sum()),
    }


def recall(results: list[ExampleResult]) -> float:
    """The ranked path's recall, mean over the examples."""
    return sum(r.ranked_recall for r in results) / len(results)


def table(
    title: str, means: dict[str, Scores], ranked_recall: float, lead: dict[str, float], count: int
) -> str:
    lines = [title, "system          ROUGE-1  ROUGE-2  ROUGE-L"]
    for name, scores in means.items():
        lines.append(
            f"{name:<15} {100 * scores.rouge1:7.2f}  {100 * scores.rouge2:7.2f}  "
            f"{100 * scores.rougeL:7.2f}"
        )
    lines.append(f"{RANKED} recall of the cited references: {ranked_recall:.3f}")
    found = verdicts(means)
    lines.append(
        f"beats lead: {found['beats_lead']}, level with TextRank: {found['level_with_textrank']}"
    )
    lines.append(
        f"ROUGE-L over TextRank: {lead['mean']:+.2f} (95% bootstrap interval "
        f"{lead['ci95_low']:+.2f} to {lead['ci95_high']:+.2f}), ahead on {lead['wins']} of "
        f"{count} examples"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset", nargs="?", type=Path, default=DATA)
    parser.add_argument("--home", type=Path, help="litpipe home (default: a temporary folder)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as temporary:
        # Offline whatever the environment says: this measures the offline engine.
        settings = Settings(
            home=args.home or Path(temporary), llm={"model": "offline", "agents": {}}
        )
        evaluation = evaluate_related_work(settings_groups(settings), args.dataset)
    results = evaluation.per_example
    half = len(results) // 2
    slices = {
        f"dev (examples 0-{half - 1})": results[:half],
        f"held-out (examples {half}-{len(results) - 1})": results[half:],
        f"all ({len(results)} examples)": results,
    }
    means = {label: slice_means(part) for label, part in slices.items()}
    print(
        f"Related work on {args.dataset}: writer {evaluation.engine}, embedder "
        f"{evaluation.embedder}, {evaluation.seconds:.0f} s; budget: {evaluation.budget}; "
        f"{RANKED} ranks a pool of {evaluation.pool} references"
    )
    for label, found in means.items():
        part = slices[label]
        print(f"\n{table(label, found, recall(part), lead_over_textrank(part), len(part))}")
    everything = means[f"all ({len(results)} examples)"]
    print(
        json.dumps(
            {
                "benchmark": "related_work_rouge",
                "dataset": str(args.dataset),
                "examples": len(results),
                "engine": evaluation.engine,
                "embedder": evaluation.embedder,
                "slices": {
                    label: {
                        name: {m: round(100 * getattr(s, m), 2) for m in ROUGE_TYPES}
                        for name, s in found.items()
                    }
                    | verdicts(found)
                    | {f"{RANKED}_recall": round(recall(slices[label]), 3)}
                    | {"rougeL_over_textrank": lead_over_textrank(slices[label])}
                    for label, found in means.items()
                },
                "means": {
                    name: {m: round(100 * getattr(s, m), 2) for m in ROUGE_TYPES}
                    for name, s in everything.items()
                },
                **verdicts(everything),
                "pool": evaluation.pool,
                f"{RANKED}_recall": round(evaluation.ranked_recall, 3),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
