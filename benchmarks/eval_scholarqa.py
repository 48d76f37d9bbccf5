"""litpipe's query-focused multi-document answers on ScholarQABench's 108 expert questions.

Each question's paper snippets are its collection (in memory); litpipe ranks them for the
question (BM25 + MiniLM + RRF, MMR) and the `query_answer` agent answers within the expert
answer's word count, citing the snippets (`litpipe/evaluation/scholarqa.py`). Lead, LexRank and
TextRank get the same snippets and budget. Reported: ROUGE-1/2/L F-measures against the expert
answer, citation precision and recall of the expert's papers, mean words, per system; and the
wall time. Offline unless `--model` routes the writer to a model.

Usage: python benchmarks/eval_scholarqa.py [DATASET] [--limit N] [--model M] [--api-base URL]
       [--out DIR]
(DATASET defaults to ../shared/data/scholarqa-multi/scholarqa_multi.jsonl.) Prints the table,
then one JSON object as the last line.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from litpipe.evaluation.scholarqa import evaluate_scholarqa, figures, format_table
from litpipe.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
DATASET = ROOT.parent / "shared" / "data" / "scholarqa-multi" / "scholarqa_multi.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", nargs="?", type=Path, default=DATASET)
    parser.add_argument("--limit", type=int, help="the first N questions only")
    parser.add_argument("--model", help="the writer's model (default: offline)")
    parser.add_argument("--api-base", help="for an OpenAI-compatible server")
    parser.add_argument("--out", type=Path, help="also write scholarqa_eval.json here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        settings = Settings(home=Path(home), llm={"model": args.model, "api_base": args.api_base})
        started = time.perf_counter()
        evaluation = evaluate_scholarqa(settings, args.dataset, args.limit)
        wall = time.perf_counter() - started
    print(format_table(evaluation))
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "scholarqa_eval.json").write_text(evaluation.model_dump_json(indent=1))
    summary = {
        "dataset": str(args.dataset),
        "examples": evaluation.examples,
        "engine": evaluation.engine,
        "embedder": evaluation.embedder,
        **{name: round(value, 4) for name, value in figures(evaluation).items()},
        "seconds": round(wall, 1),
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
