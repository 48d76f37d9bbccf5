"""Counts as a user reads them: a noun agrees with its count (`counted`), a source's papers are
counted apart from the rows that failed to enter, and report.json's model calls tell the calls
that failed for good from the requests sent."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from litpipe.cli import main
from litpipe.ingest.library import LibraryEntry, library_discovery
from litpipe.text import counted

# A count of one with a plural noun, as the commands' lines used to say ("1 papers analysed").
ONE_WITH_A_PLURAL = re.compile(
    r"\b1 (papers|chunks|questions|answers|insights|relationships|rows|words|requests|"
    r"evidence chunks|entries|sentences)\b"
)


def test_counted_agrees_with_its_count() -> None:
    assert [counted(n, "paper") for n in (0, 1, 2)] == ["0 papers", "1 paper", "2 papers"]
    assert counted(1, "entry", "entries") == "1 entry"
    assert counted(3, "entry", "entries") == "3 entries"


def test_a_librarys_entries_left_aside_are_counted_in_the_plural(tmp_path: Path) -> None:
    entries = [LibraryEntry(key=f"k{n}", name=f"entry k{n}") for n in range(2)]
    with_abstract = LibraryEntry(key="ok", name="entry ok", title="A", abstract="We study A.")
    found = library_discovery([*entries, with_abstract], "refs", tmp_path / "refs.bib", "entry")
    assert found.notes == ["2 entries without a PDF or an abstract left aside: k0, k1"]


def test_a_run_counts_its_papers_apart_from_the_rows_that_failed_and_in_the_singular(
    tmp_path: Path, tiny_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table = tmp_path / "mixed.csv"
    table.write_text(
        "id,title,abstract\n"
        'y1,Ale yeast proteomics,"We profile ale yeast proteins across fermentation."\n'
        'y1,A duplicate id,"This row repeats the id of the first."\n'
        "y3,An empty abstract,\n",
        encoding="utf-8",
    )
    home = tmp_path / "home"

    code = main(["run", str(table), "--home", str(home), "--embedder", str(tiny_model)])

    said = capsys.readouterr().err
    assert code == 0, said
    lines = said.splitlines()
    assert lines[0] == f"{table}: 1 paper in collection 'mixed' (2 rows failed: listed below)"
    assert [line for line in lines if line.startswith("  failed: ")] == [
        line for line in lines[1:3]
    ]
    assert any(line.startswith("1 paper analysed: ") for line in lines), said
    assert ONE_WITH_A_PLURAL.search(said) is None, ONE_WITH_A_PLURAL.search(said)
    report = json.loads((home / "outputs" / "mixed" / "report.json").read_text())
    assert report["papers"] == 1 and len(report["failed_papers"]) == 2
    # Offline: no call, and no request sent.
    assert report["llm_calls"] == {"made": 0, "cached": 0, "failed": 0, "requests_sent": 0}

    assert main(["status", "--home", str(home), "--embedder", str(tiny_model)]) == 0
    assert "mixed: 1 paper\n" in capsys.readouterr().out
