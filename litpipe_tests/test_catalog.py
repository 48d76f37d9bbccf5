from pathlib import Path

import pytest

from litpipe.catalog import Catalog, Registration
from litpipe.schemas import PaperSource


def source(paper_id: str, sha: str, collection: str = "bio") -> PaperSource:
    return PaperSource(
        paper_id=paper_id,
        collection=collection,
        kind="pdf",
        path=f"/x/{paper_id}.pdf",
        content_sha256=sha,
    )


def test_registration_is_idempotent_and_notices_new_content(tmp_path: Path) -> None:
    catalog = Catalog(tmp_path / "catalog.sqlite")
    assert catalog.register(source("p1", "aaa")) is Registration.NEW
    assert catalog.register(source("p1", "aaa")) is Registration.UNCHANGED
    assert catalog.register(source("p1", "bbb")) is Registration.CHANGED
    assert catalog.source("p1").content_sha256 == "bbb"
    assert catalog.papers("bio") == ["p1"]


def test_a_paper_can_belong_to_several_collections(tmp_path: Path) -> None:
    catalog = Catalog(tmp_path / "catalog.sqlite")
    catalog.register(source("p1", "aaa", "bio"))
    catalog.register(source("p2", "ccc", "bio"))
    assert catalog.register(source("p1", "aaa", "reading-group")) is Registration.UNCHANGED
    assert catalog.collections() == ["bio", "reading-group"]
    assert catalog.papers("reading-group") == ["p1"]
    assert catalog.papers("bio") == ["p1", "p2"]


def test_unknown_paper_says_which_catalog(tmp_path: Path) -> None:
    catalog = Catalog(tmp_path / "catalog.sqlite")
    with pytest.raises(KeyError, match="nope"):
        catalog.source("nope")
