"""litpipe's query-focused multi-document answers on ScholarQABench's 108 expert questions.

Each question's paper snippets are ingested as a collection of its own, and the question asked
of it as `litpipe ask --collection` asks (`litpipe eval scholarqa`, in a fresh home; see
`litpipe/evaluation/scholarqa.py`): litpipe's answer is cut to the expert answer's word count.
Lead, LexRank and TextRank get the same snippets and budget. Reported: ROUGE-1/2/L F-measures
against the expert answer, citation precision and recall of the expert's papers, mean words, per
system; and the wall time. Offline unless `--model` routes the writer to a model.

`--answer-modes` compares the answer modes instead (`litpipe eval scholarqa-answer-modes`,
`litpipe/evaluation/scholarqa_answer_modes.py`): single-view, MASS-RAG multi-view and multi-view
answers, each from the same snippets ranked in memory. `--stub` routes every agent to the local stub
server (litpipe_tests/stub_llm.py) answering schema-valid replies generated from each request:
it measures the calls and the plumbing, not the quality of a model.

Usage: python benchmarks/eval_scholarqa.py [DATASET] [--limit N] [--model M] [--api-base URL]
       [--answer-modes] [--stub] [--out DIR]
(DATASET defaults to ../shared/data/scholarqa-multi/scholarqa_multi.jsonl.) Prints the table,
then one JSON object as the last line.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

from litpipe.cli import main as litpipe
from litpipe.evaluation import scholarqa_answer_modes
from litpipe.settings import Settings
from litpipe.settings.groups import settings_groups

ROOT = Path(__file__).resolve().parents[1]
DATASET = ROOT.parent / "shared" / "data" / "scholarqa-multi" / "scholarqa_multi.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", nargs="?", type=Path, default=DATASET)
    parser.add_argument("--limit", type=int, help="the first N questions only")
    parser.add_argument("--model", help="the writer's model (default: offline)")
    parser.add_argument("--api-base", help="for an OpenAI-compatible server")
    parser.add_argument(
        "--answer-modes",
        action="store_true",
        help="compare single-view, multi-view and multi-view answers on the same snippets",
    )
    parser.add_argument(
        "--stub", action="store_true", help="every agent answered by the local stub server"
    )
    parser.add_argument("--out", type=Path, help="also write the evaluation's JSON here")
    args = parser.parse_args()
    with ExitStack() as stack:
        home = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        llm = {"model": args.model, "api_base": args.api_base}
        if args.stub:
            from litpipe_tests.stub_llm import StubLLM

            stub = stack.enter_context(StubLLM(lifetime_s=3600, schema_driven=True))
            llm = {"model": "openai/stub", "api_base": stub.url}
        if not args.answer_modes:
            # The command itself: it prints the table and, last, its JSON line.
            limit = ["--limit", str(args.limit)] if args.limit else []
            model = ["--model", llm["model"]] if llm["model"] else []
            api_base = ["--api-base", llm["api_base"]] if llm["api_base"] else []
            out = ["--out", str(args.out)] if args.out else []
            command = ["eval", "scholarqa", "--dataset", str(args.dataset), "--home", str(home)]
            raise SystemExit(litpipe([*command, *limit, *model, *api_base, *out]))
        settings = Settings(home=home, llm=llm)
        started = time.perf_counter()
        evaluation = scholarqa_answer_modes.evaluate_answer_modes(
            settings_groups(settings), args.dataset, args.limit
        )
        wall = time.perf_counter() - started
    print(scholarqa_answer_modes.format_table(evaluation))
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "scholarqa_answer_modes.json").write_text(evaluation.model_dump_json(indent=1))
    summary = {
        "dataset": str(args.dataset),
        "examples": evaluation.examples,
        "engine": evaluation.engine,
        "embedder": evaluation.embedder,
        **{
            name: round(value, 4)
            for name, value in scholarqa_answer_modes.figures(evaluation).items()
        },
        "seconds": round(wall, 1),
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
