"""TL;DRs of SciTLDR-A's test papers: litpipe's `tldr` agent against lead-1 and TextRank-1.

Runs `litpipe.evaluation.tldr.evaluate_tldr` (what `litpipe eval tldr` materializes) on the full
test split, offline unless `--model` is given, and prints its table. With `--tune`, first scores
the offline engine's title weight over a grid on the dev split only (`--dev`), which is how
`litpipe.extractive.tldr.TITLE_WEIGHT` was chosen; test is never used for that.

Usage: python benchmarks/eval_tldr.py [--dataset CSV_OR_JSONL] [--limit N] [--model M]
       [--tune] [--dev JSONL]
Prints the table, then one JSON object as the last line.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

from litpipe.evaluation.rouge import ROUGE_TYPES, mean_scores
from litpipe.evaluation.tldr import best_of_golds, evaluate_tldr, figures, format_table
from litpipe.evaluation.tldr import read_examples as read_papers
from litpipe.extractive.tldr import TITLE_WEIGHT, TldrInput, offline_tldr
from litpipe.settings import Settings
from litpipe.settings.groups import settings_groups

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "scitldr"
TITLE_WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 4.0)


def tune(dev: Path) -> dict[str, float]:
    """Mean ROUGE-1/2/L F (averaged) of the offline engine per title weight, on `dev`."""
    papers = read_papers(dev)
    grid = {}
    for weight in TITLE_WEIGHTS:
        scores = mean_scores(
            [
                best_of_golds(
                    offline_tldr(TldrInput(title=p.title, abstract=p.abstract), weight).tldr,
                    p.golds,
                )[0]
                for p in papers
            ]
        )
        grid[str(weight)] = round(
            statistics.fmean(getattr(scores, metric) for metric in ROUGE_TYPES), 4
        )
        print(f"dev, title weight {weight}: mean ROUGE F {100 * grid[str(weight)]:.2f}")
    return grid


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--dataset", type=Path, default=DATA / "scitldr_a_test_titles_abstracts.csv"
    )
    parser.add_argument("--limit", type=int)
    parser.add_argument("--model", help="litellm model for the `tldr` agent (default: offline)")
    parser.add_argument("--tune", action="store_true", help="score the title weights on dev")
    parser.add_argument("--dev", type=Path, default=DATA / "SciTLDR-A_dev.jsonl")
    args = parser.parse_args()
    grid = tune(args.dev) if args.tune else None
    with tempfile.TemporaryDirectory() as home:
        overrides = {"llm": {"model": args.model}} if args.model else {}
        evaluation = evaluate_tldr(
            settings_groups(Settings(home=Path(home), **overrides)), args.dataset, args.limit
        )
    print(format_table(evaluation))
    print(
        json.dumps(
            {
                "dataset": str(args.dataset),
                "examples": evaluation.examples,
                "engine": evaluation.engine,
                "title_weight": TITLE_WEIGHT,
                **{name: round(value, 4) for name, value in figures(evaluation).items()},
                **({"dev_grid": grid} if grid else {}),
                "seconds": evaluation.seconds,
            }
        )
    )


if __name__ == "__main__":
    main()
