"""The flags every command but `init` takes (its home, `-v`, the models, the synthesis's
method, `--set`, `--preset`), and the settings they give."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, get_args

from litpipe.commands.terminal import LOG_FILE
from litpipe.settings import StructuredOutput, SynthesisSettings, preset_names
from litpipe.validation import validation_problems


def add_common_flags(parser: argparse.ArgumentParser) -> None:
    """The flags every command but `init` takes."""
    parser.add_argument(
        "--home", type=Path, help="litpipe home (default: $LITPIPE_HOME or ./.litpipe)"
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="also show other libraries' warnings and progress bars, and litpipe's info (each "
        "model call), on the terminal "
        f"(their warnings are always in HOME/{LOG_FILE})",
    )
    parser.add_argument(
        "--embedder", help="sentence-transformers model name or local path (default: MiniLM)"
    )
    parser.add_argument(
        "--model", help="litellm model for every agent, e.g. gpt-4o-mini (default: offline)"
    )
    parser.add_argument("--api-base", help="base URL of an OpenAI-compatible server")
    parser.add_argument(
        "--structured-output",
        choices=get_args(StructuredOutput),
        help="how the reply's JSON schema reaches the model: json_schema suits vLLM, llama.cpp, "
        "Ollama and LM Studio (default: $LITPIPE_LLM__STRUCTURED_OUTPUT or auto, as litellm "
        "knows the model)",
    )
    parser.add_argument(
        "--method",
        choices=get_args(SynthesisSettings.model_fields["method"].annotation),
        help="how the synthesis is written: relational (X-Sum pipeline 2, from the relationship "
        "analysis; default) or flat (pipeline 1, every paper's answers in one prompt)",
    )
    parser.add_argument(
        "--pattern",
        choices=get_args(SynthesisSettings.model_fields["pattern"].annotation),
        help="how the synthesis fits the writer's context (default: auto, by size)",
    )
    parser.add_argument(
        "--answer-mode",
        choices=get_args(SynthesisSettings.model_fields["answer_mode"].annotation),
        help="how a question is answered from its evidence: single (default), multi_view "
        "(MASS-RAG) or multi_view_answers",
    )
    parser.add_argument(
        "--set",
        dest="assignments",
        action="append",
        metavar="KEY=VALUE",
        help="any setting by its dotted name, e.g. --set grading.blocking=true (repeatable; "
        "`litpipe config` lists them with their values; a named flag wins over it)",
    )
    parser.add_argument(
        "--preset",
        choices=preset_names(),
        help="a named set of defaults: offline (no model), fast (fewer questions and "
        "candidates, no reranker) or thorough (more candidates, debate reranking, multi-view "
        "answers); any setting given otherwise wins (default: $LITPIPE_PRESET, or none)",
    )


def settings_from_flags(args: argparse.Namespace) -> dict[str, Any]:
    """The settings the common flags give, nested as `Settings` takes them (a flag not given
    leaves its setting to the environment, litpipe.toml, the preset and the default)."""

    from litpipe.config import assignments

    def given(**values: object) -> dict[str, object]:
        return {name: value for name, value in values.items() if value is not None}

    # The named flags win over a --set of the same setting: they are the more specific.
    settings = assignments(args.assignments or [])
    named = {
        "ingest": given(embedder=args.embedder),
        "llm": given(
            model=args.model, api_base=args.api_base, structured_output=args.structured_output
        ),
        "synthesis": given(method=args.method, pattern=args.pattern, answer_mode=args.answer_mode),
    }
    for group, values in named.items():
        if values:
            settings[group] = {**settings.get(group, {}), **values}
    return settings | given(home=args.home, preset=args.preset)


def one_line(error: ValueError) -> str:
    """A settings error in one line: a pydantic ValidationError as `setting: message`."""
    from pydantic import ValidationError

    if isinstance(error, ValidationError):
        return validation_problems(error)
    return " ".join(str(error).split())
