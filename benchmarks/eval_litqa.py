"""LitQA2's nine questions on their own papers: does each query-focused summary state the ideal
answer (or a distractor)?

Runs `litpipe eval litqa` (the command itself: the papers ingested, each question asked through
the `query_summary` asset, each final summary graded by the offline rule of
`litpipe.evaluation.litqa`) in a fresh temporary litpipe home, offline unless `--model` is given.

Usage: python benchmarks/eval_litqa.py [--dataset JSONL] [--corpus PDF_FOLDER] [--model M]
Prints the table, then one JSON object as the last line (the command's).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from litpipe.cli import main as litpipe

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "litqa2-cc-by"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, default=DATA / "litqa2_subset_with_pdfs.jsonl")
    parser.add_argument("--corpus", type=Path, default=DATA / "pdfs")
    parser.add_argument("--model", help="litellm model for every agent (default: offline)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        command = ["eval", "litqa", "--dataset", str(args.dataset), "--corpus", str(args.corpus)]
        command += ["--home", home] + (["--model", args.model] if args.model else [])
        return litpipe(command)


if __name__ == "__main__":
    sys.exit(main())
