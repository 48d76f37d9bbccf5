"""Input from outside (partition keys from the UI or GraphQL, paper text, files) cannot write
outside the home, break ids apart, or carry markup into what people open."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest
from pydantic import BaseModel

from litpipe.artifacts import ArtifactStore, UnsafeKeyError
from litpipe.defs.io_manager import PydanticJSONIOManager
from litpipe.defs.resources import ArtifactsResource
from litpipe.settings import Settings

OUTSIDE_KEYS = ["../../x", "/abs/path", "a/b", "..", ".hidden", ""]


class Note(BaseModel):
    text: str


@pytest.mark.parametrize("key", [k for k in OUTSIDE_KEYS if k])
def test_a_key_that_is_a_path_is_refused_by_every_path_builder(tmp_path: Path, key: str) -> None:
    home = tmp_path / "home"
    store = ArtifactStore(home / "artifacts")
    with pytest.raises(UnsafeKeyError, match="is not a litpipe id") as refused:
        store.write(["paper_document"], key, Note(text="x"))
    assert repr(key) in str(refused.value)
    settings = Settings(home=home)
    with pytest.raises(UnsafeKeyError, match=repr(key).replace(".", r"\.")):
        settings.outputs_dir(key)
    resource = ArtifactsResource.from_settings(settings)
    with pytest.raises(UnsafeKeyError):
        resource.outputs_dir(key)
    assert not any(p.is_file() for p in tmp_path.rglob("*"))


def test_ids_litpipe_makes_are_accepted(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path)
    for key in ["10.1000_xyz", "arxiv-2401.01234", "sha256-0123456789abcdef", "2026-01-01"]:
        assert store.path(["a"], key) == tmp_path / "a" / f"{key}.json"
    assert store.path(["a"], None).name == "__all__.json"


def test_the_store_refuses_a_path_that_resolves_outside_its_folder(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    base = tmp_path / "artifacts"
    base.mkdir()
    (base / "paper_document").symlink_to(outside, target_is_directory=True)
    with pytest.raises(UnsafeKeyError, match="outside"):
        ArtifactStore(base).write(["paper_document"], "paper-1", Note(text="x"))
    assert not list(outside.iterdir())


def test_a_collection_key_added_from_outside_writes_nothing_outside_the_home(
    tmp_path: Path,
) -> None:
    # As through GraphQL's addDynamicPartition: the key reaches the IO manager unchecked.
    collections = dg.DynamicPartitionsDefinition(name="collections")

    @dg.asset(partitions_def=collections)
    def relationships(context) -> Note:  # unannotated: a string annotation is refused
        return Note(text=context.partition_key)

    home = tmp_path / "a" / "b" / "home"
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("collections", ["../../x"])
    result = dg.materialize(
        [relationships],
        partition_key="../../x",
        instance=instance,
        resources={"io_manager": PydanticJSONIOManager(base_dir=str(home / "artifacts"))},
        raise_on_error=False,
    )
    assert not result.success
    failure = result.get_step_failure_events()[0].step_failure_data.error
    assert "'../../x' is not a litpipe id" in failure.to_string()
    assert not any(p.is_file() for p in tmp_path.rglob("*"))
