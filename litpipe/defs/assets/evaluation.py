"""The `litpipe eval` datasets as assets of group "evaluation": one per registered evaluation
(`litpipe/evaluation/registry.py`), key `eval_<name>`, so every run's figures are kept as
materializations and the UI plots each figure over time.

An evaluation with an `evaluate` function is an asset that does the work: launched from the UI
with run config `dataset` (a path), `limit` and `out`, or by `litpipe eval <name>` in-process. It
writes `<stem>.md` and `<stem>.json` (default folder `LITPIPE_HOME/outputs/eval`) and records each
figure as float metadata, with the engine, model, embedder, dataset, examples and the table.

An evaluation whose work runs other Dagster runs (`litqa` materializes a `query_summary`
partition per question, `scholarqa` a `collection_answer` one) cannot be an asset's step: a run
launching runs would hold a worker while it waits, and the nested runs would not belong to it.
It is an external asset (`AssetSpec`) of the same group instead: its command does the work and
reports a runless materialization with the same metadata (`report_evaluation`), so its figures
are plotted like the others'.
"""

from pathlib import Path

import dagster as dg
from pydantic import BaseModel, Field

from litpipe.agents.code_versions import imported_code_version
from litpipe.defs.assets.related_work import bad_input
from litpipe.defs.jobs import RUN_TAGS
from litpipe.defs.llm_steps import ModelStep
from litpipe.defs.report_metadata import markdown_metadata
from litpipe.defs.steps import step_asset
from litpipe.defs.versions import CodeVersion, NamedVersion, declared_code_version
from litpipe.evaluation.registry import EVALUATIONS, RegisteredEvaluation, run_facts
from litpipe.files import write_atomically
from litpipe.settings import HomePaths
from litpipe.settings.groups import SettingsGroups

GROUP = "evaluation"


class EvaluationConfig(dg.Config):
    dataset: str = Field(description="The dataset file (or folder), as `--dataset` takes it.")
    limit: int | None = Field(default=None, description="Score only the first N examples.")
    out: str | None = Field(
        default=None, description="Folder for the .md and .json (default: outputs/eval)."
    )


def output_folder(paths: HomePaths, out: str | Path | None) -> Path:
    return Path(out) if out else paths.outputs_root / "eval"


def write_evaluation(
    entry: RegisteredEvaluation, evaluation: BaseModel, folder: Path
) -> dict[str, Path]:
    """`<stem>.md` (the table) and `<stem>.json` (the whole evaluation) in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {
        "markdown": folder / f"{entry.stem}.md",
        "json": folder / f"{entry.stem}.json",
    }
    write_atomically(files["markdown"], entry.table(evaluation))
    write_atomically(files["json"], evaluation.model_dump_json(indent=2) + "\n")
    return files


def evaluation_metadata(
    entry: RegisteredEvaluation, evaluation: BaseModel, files: dict[str, Path]
) -> dict[str, dg.MetadataValue | str | int]:
    """Each figure as a float (what the UI plots), the run's facts, the table and the files."""
    facts = run_facts(evaluation)
    return {
        **{
            name: dg.MetadataValue.float(float(value))
            for name, value in entry.figures(evaluation).items()
        },
        "engine": str(facts["engine"]),
        "model": str(facts.get("model", facts["engine"])),
        "embedder": str(facts.get("embedder", "none")),
        "dataset": dg.MetadataValue.path(str(facts["dataset"])),
        "examples": int(facts["examples"]),
        "seconds": dg.MetadataValue.float(float(getattr(evaluation, "seconds", 0.0))),
        "table": markdown_metadata(entry.table(evaluation)),
        **{name: dg.MetadataValue.path(str(path)) for name, path in files.items()},
    }


def evaluation_version(entry: RegisteredEvaluation) -> CodeVersion:
    """The evaluation module's source and the litpipe code it imports (`imported_code_version`:
    its metrics, baselines, the agents it asks and their offline engines): a changed metric,
    baseline or engine shows its figures stale. (The dataset and the models are the run's
    config and settings, recorded as metadata.)"""
    module = entry.result.__module__
    return CodeVersion(versions=(NamedVersion(module, lambda *_: imported_code_version(module)),))


def _evaluation_asset(entry: RegisteredEvaluation, groups: SettingsGroups) -> dg.AssetsDefinition:
    evaluate = entry.evaluate
    assert evaluate is not None
    step = ModelStep(agents=entry.agents, code=evaluation_version(entry))

    @step_asset(
        step,
        groups,
        resources=(),
        name=entry.asset_name,
        group_name=GROUP,
        description=f"`litpipe eval {entry.name}`: {entry.description}. Dataset: "
        f"{entry.dataset_help} (full set: ../shared/data/{entry.default_dataset}).",
    )
    def evaluation_asset(
        context: dg.AssetExecutionContext, config: EvaluationConfig
    ) -> dg.MaterializeResult:
        if config.limit is not None and config.limit < 1:
            raise bad_input(f"--limit must be at least 1, not {config.limit}")
        with step.run(context) as run:
            client = run.asker().client
            try:
                evaluation = evaluate(groups, Path(config.dataset), config.limit, client)
            except entry.input_errors as error:
                raise bad_input(str(error)) from error
        files = write_evaluation(entry, evaluation, output_folder(groups["paths"], config.out))
        context.log.info(f"written: {files['markdown']}, {files['json']}")
        return dg.MaterializeResult(
            metadata={**evaluation_metadata(entry, evaluation, files), **run.usage()}
        )

    return evaluation_asset


def reported_asset_key(entry: RegisteredEvaluation) -> dg.AssetKey:
    return dg.AssetKey(entry.asset_name)


def report_evaluation(
    instance: dg.DagsterInstance,
    entry: RegisteredEvaluation,
    evaluation: BaseModel,
    files: dict[str, Path],
) -> None:
    """Record a materialization of an evaluation its command ran itself (no run of its own)."""
    instance.report_runless_asset_event(
        dg.AssetMaterialization(
            asset_key=reported_asset_key(entry),
            description=f"reported by `{entry.cli}`",
            metadata=evaluation_metadata(entry, evaluation, files),
        )
    )


# The evaluations an asset step runs: what `litpipe eval <name>` materializes in-process.
EVALUATION_ASSETS = [entry.asset_name for entry in EVALUATIONS.values() if entry.evaluate]
evaluation_job = dg.define_asset_job(
    "evaluation_job", selection=dg.AssetSelection.assets(*EVALUATION_ASSETS), tags=RUN_TAGS
)


def build_evaluation_assets(groups: SettingsGroups) -> list[dg.AssetsDefinition | dg.AssetSpec]:
    """One asset per registered evaluation; an external one for those their command runs. An
    evaluation is a run of the pipeline's stages under the settings: its step hands it the
    `groups` (every one: `evaluate` unpacks those it reads)."""
    return [
        _evaluation_asset(entry, groups)
        if entry.evaluate is not None
        else dg.AssetSpec(
            entry.asset_name,
            group_name=GROUP,
            code_version=declared_code_version(entry.asset_name, evaluation_version(entry), groups),
            description=f"`{entry.cli}` (reported by the command, which runs "
            f"`{entry.runs}` itself): {entry.description}. Dataset: {entry.dataset_help} "
            f"(full set: ../shared/data/{entry.default_dataset}).",
        )
        for entry in EVALUATIONS.values()
    ]
