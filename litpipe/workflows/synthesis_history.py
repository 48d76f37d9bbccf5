"""A collection's synthesis history, kept under the home (whatever the Dagster instance's
storage: SQLite or PostgreSQL): every materialization of its `synthesis` and
`relationship_analysis` whose output differs from the version kept last, by data version.

Layout: `HOME/history/<collection>/<asset>/<recorded>-<data_version>.json`, `<recorded>` the
UTC time it was kept (`20260104T101500.123456Z`, so that names sort by time), each file a
`HistoryEntry` written atomically and never overwritten: a rebuild whose output is the one
kept last adds nothing; a later output equal to an older one is kept again, at its own time.

Runs without Dagster: the `synthesis` and `relationship_analysis` assets call `record`, and
`litpipe diff`, `report.json` and the nightly digest read it (`version_at`, `diff_between`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel

from litpipe.files import checked_key, write_atomically
from litpipe.hashing import digest
from litpipe.schemas import RelationshipAnalysis, Synthesis
from litpipe.schemas.changes import SynthesisDiff
from litpipe.schemas.history import HistoryAsset, HistoryEntry
from litpipe.workflows.synthesis_diff import synthesis_diff

HISTORY_FOLDER = "history"
_STAMP = "%Y%m%dT%H%M%S.%fZ"


def now() -> datetime:
    """The clock the history is kept by (a test may set it)."""
    return datetime.now(UTC)


def data_version(output: BaseModel) -> str:
    """The hash of an output, as the assets' data versions are (`defs.versions.data_version`)."""
    return digest(output.model_dump_json())


def folder(home: Path, collection: str, asset: HistoryAsset) -> Path:
    return home / HISTORY_FOLDER / checked_key(collection, "collection") / asset


def file_name(recorded_at: datetime, version: str) -> str:
    """A kept version's file name: its time first, so that names sort by time."""
    return f"{recorded_at.strftime(_STAMP)}-{version}.json"


def entries(home: Path, collection: str, asset: HistoryAsset) -> list[Path]:
    """The kept versions' files, oldest first."""
    where = folder(home, collection, asset)
    return sorted(where.glob("*.json")) if where.is_dir() else []


def stamp_of(path: Path) -> datetime:
    return datetime.strptime(path.stem.rsplit("-", 1)[0], _STAMP).replace(tzinfo=UTC)


def _version(path: Path) -> str:
    return path.stem.rsplit("-", 1)[1]


def read(path: Path) -> HistoryEntry:
    return HistoryEntry.model_validate_json(path.read_text(encoding="utf-8"))


def record(
    home: Path,
    output: Synthesis | RelationshipAnalysis,
    analysis: RelationshipAnalysis | None = None,
    at: datetime | None = None,
) -> HistoryEntry | None:
    """Keeps `output` (a synthesis, with the `analysis` it was written from, or an analysis)
    unless the version kept last is the same; the entry kept, or None when nothing was."""
    asset: HistoryAsset = "synthesis" if isinstance(output, Synthesis) else "relationship_analysis"
    version = data_version(output)
    kept = entries(home, output.collection, asset)
    if kept and _version(kept[-1]) == version:
        return None
    when = at or now()
    entry = HistoryEntry(
        collection=output.collection,
        asset=asset,
        recorded_at=when.isoformat(timespec="microseconds"),
        data_version=version,
        analysis_version=data_version(analysis) if analysis is not None else None,
        synthesis=output if isinstance(output, Synthesis) else None,
        analysis=output if isinstance(output, RelationshipAnalysis) else None,
    )
    where = folder(home, output.collection, asset)
    where.mkdir(parents=True, exist_ok=True)
    write_atomically(where / file_name(when, version), entry.model_dump_json())
    return entry


def version_at(
    home: Path, collection: str, at: datetime | None, strictly_before: bool = False
) -> HistoryEntry | None:
    """The synthesis version current at `at` (the last kept at or before it, or `strictly_before`
    it; None before any), or the latest with `at` None."""
    kept = [
        p
        for p in entries(home, collection, "synthesis")
        if at is None or stamp_of(p) < at or (stamp_of(p) == at and not strictly_before)
    ]
    return read(kept[-1]) if kept else None


def version_before(home: Path, entry: HistoryEntry) -> HistoryEntry | None:
    """The synthesis version kept before `entry` (None: it is the first)."""
    at = datetime.fromisoformat(entry.recorded_at)
    kept = [p for p in entries(home, entry.collection, "synthesis") if stamp_of(p) < at]
    return read(kept[-1]) if kept else None


def version_named(home: Path, collection: str, name: str) -> HistoryEntry:
    """The synthesis version a user names: its data version (or a prefix of it that only one
    version has), or its file's name; the latest kept of that version. ValueError when none or
    several match."""
    return read(named_file(entries(home, collection, "synthesis"), name, collection, "synthesis"))


def named_file(kept: list[Path], name: str, owner: str, kind: str) -> Path:
    """Of the kept versions' files, the one `name` names (its data version, a prefix of it
    only one version has, or its file's name; the latest kept of that version). ValueError,
    naming the `owner` and the `kind` of output, when none or several match."""
    exact = [p for p in kept if name in {p.stem, p.name}]
    found = exact or [p for p in kept if _version(p).startswith(name)]
    versions = {_version(p) for p in found}
    if not found:
        raise ValueError(f"{owner}: no kept {kind} version {name!r}")
    if len(versions) > 1:
        raise ValueError(f"{owner}: {name!r} names several versions: {sorted(versions)}")
    return found[-1]


def analysis_of(home: Path, entry: HistoryEntry) -> RelationshipAnalysis | None:
    """The relationship analysis a kept synthesis was written from: the kept analysis of its
    recorded data version, else the one current when it was kept."""
    kept = entries(home, entry.collection, "relationship_analysis")
    named = [p for p in kept if _version(p) == entry.analysis_version]
    at = datetime.fromisoformat(entry.recorded_at)
    chosen = named or [p for p in kept if stamp_of(p) <= at]
    return read(chosen[-1]).analysis if chosen else None


def diff_between(
    home: Path, collection: str, old: HistoryEntry | None, new: HistoryEntry | None
) -> SynthesisDiff:
    """What changed from the kept version `old` to `new` (None: nothing kept)."""
    return synthesis_diff(
        collection,
        _pair(home, old),
        _pair(home, new),
        (old.data_version, old.recorded_at) if old else None,
        (new.data_version, new.recorded_at) if new else None,
    )


def changes_since(home: Path, collection: str, since: datetime | None) -> SynthesisDiff:
    """What changed from the version current when `since` began (the last kept before it) to
    the latest."""
    return diff_between(
        home,
        collection,
        version_at(home, collection, since, strictly_before=True) if since is not None else None,
        version_at(home, collection, None),
    )


def changes_in(home: Path, collection: str, start: datetime, end: datetime) -> SynthesisDiff:
    """What changed during [`start`, `end`): from the version kept last before `start` to the
    one kept last before `end`."""
    return diff_between(
        home,
        collection,
        version_at(home, collection, start, strictly_before=True),
        version_at(home, collection, end, strictly_before=True),
    )


def collections(home: Path) -> list[str]:
    """The collections with a kept synthesis."""
    root = home / HISTORY_FOLDER
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / "synthesis").is_dir())


def _pair(
    home: Path, entry: HistoryEntry | None
) -> tuple[Synthesis, RelationshipAnalysis | None] | None:
    if entry is None or entry.synthesis is None:
        return None
    return entry.synthesis, analysis_of(home, entry)
