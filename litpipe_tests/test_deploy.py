"""The Kubernetes deployment of deploy/: the Helm values against the Dagster chart's own schema,
the instance those values give Dagster, the shipped code location's executor, the Dockerfile's pins.

No cluster, no `helm` and no image build here: the chart's values.schema.json is test data
(litpipe_tests/data/dagster-helm/README.md says from which commit), and the part of the chart's
dagster.yaml that litpipe changes is written here as the chart's template writes it."""

from __future__ import annotations

import copy
import importlib
import importlib.util
import json
import re
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import dagster as dg
import jsonschema
import pytest
import yaml
from dagster._config import validate_config
from dagster._core.instance.config import dagster_instance_config
from dagster._core.storage.event_log.sql_event_log import SqlEventLogStorage
from dagster._serdes import class_from_code_pointer
from dagster_k8s import k8s_job_executor
from dagster_postgres.event_log import PostgresEventLogStorage
from referencing import Registry, Resource
from referencing.exceptions import NoSuchResource
from referencing.jsonschema import DRAFT202012

from litpipe.defs.definitions import build_definitions
from litpipe.settings import Settings
from litpipe.settings.groups import settings_groups

ROOT = Path(__file__).resolve().parents[1]
VALUES = ROOT / "deploy" / "helm" / "values.yaml"
DOCKERFILE = ROOT / "deploy" / "Dockerfile"
CHART_DATA = Path(__file__).parent / "data" / "dagster-helm"
SHIPPED_MODULE = "litpipe.defs.k8s_definitions"
POOL_SAFE = ("litpipe.instance.postgres_storage", "PoolSafePostgresEventLogStorage")


def load_values() -> dict[str, Any]:
    values = yaml.safe_load(VALUES.read_text("utf-8"))
    assert isinstance(values, dict)
    return values


def chart_schema() -> dict[str, Any]:
    schema = json.loads((CHART_DATA / "values.schema.json").read_text("utf-8"))
    assert isinstance(schema, dict)
    return schema


def _external_refs(node: object) -> Iterator[str]:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and not ref.startswith("#"):
            yield ref
        for value in node.values():
            yield from _external_refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _external_refs(value)


def chart_validator(schema: Mapping[str, Any]) -> jsonschema.protocols.Validator:
    """The chart's schema as Helm applies it to the values Helm has merged over the chart's
    defaults, with two differences. The Kubernetes object definitions it points to (a document on
    the network) are not fetched: each is taken as "any value", so only the chart's own
    constraints beside them are checked (an `envSecrets` item must still be an object). And
    `required` is not checked, because the chart's defaults (its values.yaml) are not here to
    merge: this file sets only what it changes, the chart fills in the rest."""
    stubs: dict[str, dict[str, Any]] = {}
    for ref in _external_refs(schema):
        url, _, pointer = ref.partition("#")
        node = stubs.setdefault(url, {})
        for part in pointer.strip("/").split("/"):
            node = node.setdefault(part, {})

    def retrieve(uri: str) -> Resource[Any]:
        if uri not in stubs:  # never the network
            raise NoSuchResource(ref=uri)
        return Resource.from_contents(stubs[uri], default_specification=DRAFT202012)

    base = jsonschema.Draft202012Validator
    without_required = jsonschema.validators.extend(base, {"required": lambda *_: iter(())})
    return without_required(schema, registry=Registry(retrieve=retrieve))


def schema_errors(values: Mapping[str, Any]) -> list[str]:
    validator = chart_validator(chart_schema())
    return [
        f"{'.'.join(map(str, error.absolute_path))}: {error.message}"
        for error in validator.iter_errors(values)
    ]


def _resolve(node: Any, schema: Mapping[str, Any]) -> Any:
    while isinstance(node, dict) and str(node.get("$ref", "")).startswith("#/$defs/"):
        node = {**schema["$defs"][node["$ref"].removeprefix("#/$defs/")], **node, "$ref": None}
    return node


def unknown_keys(value: Any, node: Any, schema: Mapping[str, Any], path: str = "") -> list[str]:
    """Keys of `value` that the chart's schema names nowhere at that place. The chart lets many
    objects take any key (and ignores a key it does not know), so a misspelt key would pass the
    schema and do nothing: a key the schema does not name is a mistake here."""
    node = _resolve(node, schema)
    if not isinstance(node, dict):
        return []
    branches = [_resolve(branch, schema) for branch in node.get("anyOf", [])] or [node]
    found: list[str] = []
    if isinstance(value, dict):
        named = [b["properties"] for b in branches if isinstance(b, dict) and b.get("properties")]
        if not named:
            return []  # a map of any keys (env, annotations, additionalInstanceConfig)
        for key, item in value.items():
            hits = [properties[key] for properties in named if key in properties]
            if not hits:
                found.append(f"{path}{key}")
            for hit in hits[:1]:
                found += unknown_keys(item, hit, schema, f"{path}{key}.")
    elif isinstance(value, list):
        for branch in branches:
            if isinstance(branch, dict) and "items" in branch:
                for index, item in enumerate(value):
                    found += unknown_keys(item, branch["items"], schema, f"{path}{index}.")
                break
    return found


def chart_dagster_yaml(values: Mapping[str, Any]) -> str:
    """The part of the dagster.yaml the chart writes that litpipe's values change, as
    templates/configmap-instance.yaml writes it: the three PostgreSQL storages with the
    connection of helpers/instance/_postgresql.tpl, the pools (`concurrency`), and last
    `{{- .Values.additionalInstanceConfig | toYaml | nindent 4 }}` appended as YAML."""
    pg = values["postgresql"]
    postgres_db: dict[str, Any] = {
        "username": pg["postgresqlUsername"],
        "password": {"env": "DAGSTER_PG_PASSWORD"},
        "hostname": pg["postgresqlHost"],
        "db_name": pg["postgresqlDatabase"],
        "port": pg["service"]["port"],
        "params": pg.get("postgresqlParams", {}),
    }
    if pg.get("postgresqlScheme"):
        postgres_db["scheme"] = pg["postgresqlScheme"]
    config = {"postgres_db": postgres_db}
    chart: dict[str, Any] = {
        "schedule_storage": {
            "module": "dagster_postgres.schedule_storage",
            "class": "PostgresScheduleStorage",
            "config": config,
        },
        "run_storage": {
            "module": "dagster_postgres.run_storage",
            "class": "PostgresRunStorage",
            "config": config,
        },
        "event_log_storage": {
            "module": "dagster_postgres.event_log",
            "class": "PostgresEventLogStorage",
            "config": config,
        },
        "telemetry": {"enabled": values.get("telemetry", {}).get("enabled", True)},
    }
    if values.get("concurrency", {}).get("enabled"):
        chart["concurrency"] = {
            "pools": {"default_limit": values["concurrency"]["pools"]["defaultLimit"]}
        }
    text = yaml.safe_dump(chart, sort_keys=False)
    if values.get("additionalInstanceConfig"):
        text += yaml.safe_dump(values["additionalInstanceConfig"], sort_keys=False)
    return text


def code_location(values: Mapping[str, Any]) -> dict[str, Any]:
    (deployment,) = values["dagster-user-deployments"]["deployments"]
    assert isinstance(deployment, dict)
    return deployment


def test_the_chart_schema_is_the_dagster_chart_s_with_its_licence() -> None:
    schema = chart_schema()
    assert schema["title"] == "DagsterHelmValues"
    # The chart's features litpipe's values use are in this version of the schema.
    assert {"additionalInstanceConfig", "concurrency", "dagsterWebserver", "dagsterDaemon"} <= set(
        schema["properties"]
    )
    assert "codeServerArgs" in schema["$defs"]["UserDeployment"]["properties"]
    licence = (CHART_DATA / "LICENSE").read_text("utf-8")
    assert "Apache License" in licence and "Version 2.0, January 2004" in licence
    readme = (CHART_DATA / "README.md").read_text("utf-8")
    assert re.search(r"\b[0-9a-f]{40}\b", readme), "the README names the commit"


def test_the_values_validate_against_the_chart_schema() -> None:
    values = load_values()
    assert schema_errors(values) == []
    assert unknown_keys(values, chart_schema(), chart_schema()) == []


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        # A Secret named as a bare string, not as `{name: ...}`.
        (lambda v: code_location(v).update(envSecrets=["litpipe-model-keys"]), "0.envSecrets"),
        (lambda v: v["dagsterDaemon"].update(envSecrets=["litpipe-model-keys"]), "envSecrets.0"),
        (lambda v: v["runLauncher"].update(type="K8sLauncher"), "runLauncher.type"),
        (lambda v: v["concurrency"]["pools"].update(defaultLimit="four"), "defaultLimit"),
        (lambda v: v["dagsterWebserver"].update(imageTag="0.1.0"), "dagsterWebserver"),
    ],
)
def test_the_schema_check_catches_a_broken_value(change: Any, expected: str) -> None:
    values = copy.deepcopy(load_values())
    change(values)
    assert any(expected in error for error in schema_errors(values))


def test_a_misspelt_key_is_caught_though_the_chart_would_ignore_it() -> None:
    values = copy.deepcopy(load_values())
    code_location(values)["codeServerArg"] = code_location(values).pop("codeServerArgs")
    values["additionalInstanceConfg"] = values.pop("additionalInstanceConfig")
    assert schema_errors(values) == []  # the chart's schema lets both through
    assert set(unknown_keys(values, chart_schema(), chart_schema())) == {
        "dagster-user-deployments.deployments.0.codeServerArg",
        "additionalInstanceConfg",
    }


def test_the_instance_the_chart_writes_runs_litpipe_s_pool_safe_storage(tmp_path: Path) -> None:
    values = load_values()
    storage = values["additionalInstanceConfig"]["event_log_storage"]
    assert (storage["module"], storage["class"]) == POOL_SAFE
    text = chart_dagster_yaml(values)
    assert text.count("\nevent_log_storage:") == 2  # the chart's, then litpipe's
    (tmp_path / "dagster.yaml").write_text(text, encoding="utf-8")

    # Dagster's own loader and validation, as every Dagster process of the release reads it.
    config, _ = dagster_instance_config(str(tmp_path))
    loaded = config["event_log_storage"]
    assert (loaded["module"], loaded["class"]) == POOL_SAFE
    # On the database of the chart's run and schedule storage, with its password variable.
    assert loaded["config"] == config["run_storage"]["config"]
    assert loaded["config"]["postgres_db"]["password"] == {"env": "DAGSTER_PG_PASSWORD"}
    assert config["concurrency"]["pools"]["default_limit"] == 4

    cls = class_from_code_pointer(*POOL_SAFE)
    assert issubclass(cls, PostgresEventLogStorage) and issubclass(cls, SqlEventLogStorage)
    assert validate_config(cls.config_type(), loaded["config"]).success


def test_the_cluster_instance_is_configured_as_the_postgres_template() -> None:
    """The same storage class, pool limit, run queue, retries and monitoring as
    deploy/dagster.postgres.yaml, the instance the PostgreSQL tests run against."""
    values = load_values()
    template = yaml.safe_load((ROOT / "deploy" / "dagster.postgres.yaml").read_text("utf-8"))
    storage = values["additionalInstanceConfig"]["event_log_storage"]
    assert (storage["module"], storage["class"]) == (
        template["event_log_storage"]["module"],
        template["event_log_storage"]["class"],
    )
    assert (
        values["concurrency"]["pools"]["defaultLimit"]
        == (template["concurrency"]["pools"]["default_limit"])
    )
    daemon = values["dagsterDaemon"]
    queued = daemon["runCoordinator"]["config"]["queuedRunCoordinator"]
    assert queued["maxConcurrentRuns"] == template["concurrency"]["runs"]["max_concurrent_runs"]
    retries = template["run_retries"]
    assert daemon["runRetries"] == {
        "enabled": retries["enabled"],
        "maxRetries": retries["max_retries"],
        "retryOnAssetOrOpFailure": retries["retry_on_asset_or_op_failure"],
    }
    monitoring = template["run_monitoring"]
    assert daemon["runMonitoring"] == {
        "enabled": monitoring["enabled"],
        "startTimeoutSeconds": monitoring["start_timeout_seconds"],
        "freeSlotsAfterRunEndSeconds": monitoring["free_slots_after_run_end_seconds"],
    }


def test_webserver_daemon_and_code_location_run_litpipe_s_image() -> None:
    values = load_values()
    image = code_location(values)["image"]
    # They open the instance, so they must import litpipe's storage class.
    assert values["dagsterWebserver"]["image"] == image
    assert values["dagsterDaemon"]["image"] == image
    assert values["runLauncher"]["type"] == "K8sRunLauncher"


def test_model_keys_come_from_a_secret_for_every_run_and_step() -> None:
    values = load_values()
    deployment = code_location(values)
    assert {"name": "litpipe-model-keys"} in deployment["envSecrets"]
    # The code location's environment goes with the runs and steps it launches.
    assert deployment["includeConfigInLaunchedRuns"] == {"enabled": True}
    # No key or password is written in the file itself.
    secret_like = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD)", re.IGNORECASE)
    assert not [name for name in deployment.get("env", {}) if secret_like.search(name)]
    assert "postgresqlPassword" not in values["postgresql"]
    assert values["generatePostgresqlPasswordSecret"] is False
    assert values["global"]["postgresqlSecretName"]


def test_the_code_location_serves_the_shipped_module() -> None:
    deployment = code_location(load_values())
    assert deployment["codeServerArgs"] == ["-m", SHIPPED_MODULE]
    assert importlib.util.find_spec(SHIPPED_MODULE) is not None
    # The image's own command serves the same module.
    cmd = re.search(r"^CMD (\[.*\])$", DOCKERFILE.read_text("utf-8"), re.MULTILINE)
    assert cmd and json.loads(cmd.group(1))[-2:] == ["-m", SHIPPED_MODULE]


def _executor_max_concurrent(job: dg.JobDefinition) -> int:
    resolved = job.executor_def.apply_config_mapping({})
    assert resolved.success
    return int(resolved.value["config"]["max_concurrent"])


def test_k8s_definitions_run_every_job_s_steps_in_pods(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LITPIPE_HOME", str(tmp_path))
    module = importlib.import_module(SHIPPED_MODULE)
    for job in module.defs.resolve_all_job_defs():
        assert job.executor_def.executor_creation_fn is k8s_job_executor.executor_creation_fn

    settings = Settings(home=tmp_path, corpus_roots=[], operations={"max_concurrent_steps": 3})
    k8s = build_definitions(
        **settings_groups(settings), executor=module.k8s_executor(settings.operations)
    )
    plain = build_definitions(**settings_groups(settings))
    jobs = {job.name: job for job in k8s.resolve_all_job_defs()}
    # The same graph as litpipe's own definitions: only the executor differs.
    assert set(jobs) == {job.name for job in plain.resolve_all_job_defs()}
    assert set(k8s.resolve_asset_graph().get_all_asset_keys()) == set(
        plain.resolve_asset_graph().get_all_asset_keys()
    )
    assert {sensor.name for sensor in k8s.sensors or []} == {s.name for s in plain.sensors or []}
    for name, job in jobs.items():
        assert job.executor_def.name == "k8s", name
        assert job.executor_def.executor_creation_fn is k8s_job_executor.executor_creation_fn
        assert _executor_max_concurrent(job) == 3, name
    assert jobs["paper_pipeline"].run_tags["dagster/retry_on_asset_or_op_failure"] == "false"


def _torch_pins(text: str) -> set[str]:
    return set(re.findall(r"torch==([0-9][\w.+]*)", text))


def test_the_dockerfile_installs_the_makefile_s_torch_and_the_k8s_extra() -> None:
    dockerfile = DOCKERFILE.read_text("utf-8")
    makefile = (ROOT / "Makefile").read_text("utf-8")
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    (pinned,) = [d.split("==")[1] for d in pyproject["project"]["dependencies"] if "torch==" in d]
    assert _torch_pins(makefile) == {pinned}
    assert _torch_pins(dockerfile) == {pinned}
    # Installed first, from PyTorch's CPU index, then held by a constraint while litpipe installs.
    torch_line = next(line for line in dockerfile.splitlines() if "pip install" in line)
    assert f"torch=={pinned}" in torch_line and "TORCH_INDEX_URL" in torch_line
    assert re.search(r"PIP_CONSTRAINT=\S+ pip install '\.\[k8s\]'", dockerfile)
    # The k8s extra pins dagster-k8s at the pinned Dagster's library version.
    (dagster_k8s,) = pyproject["project"]["optional-dependencies"]["k8s"]
    (dagster_postgres,) = [d for d in pyproject["project"]["dependencies"] if "dagster-post" in d]
    assert dagster_k8s.split("==")[1] == dagster_postgres.split("==")[1]
    assert ".[dev,k8s]" in makefile
