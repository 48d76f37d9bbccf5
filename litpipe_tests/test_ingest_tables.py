"""Abstract tables: good rows become papers, each bad row or file one clear failure."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from litpipe.ingest.structured_abstracts import without_part_labels
from litpipe.ingest.tables import document_from_row, read_table
from litpipe.schemas import sha256_text

DATA = Path(__file__).parent / "data" / "tables"
URL_SAFE = re.compile(r"[A-Za-z0-9._-]+")


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def test_csv_rows_become_sources_with_their_extra_columns() -> None:
    sources, failed = read_table(DATA / "abstracts.csv", "iclr")
    assert failed == []
    assert [source.external_id for source in sources] == ["W1", "W2", "smith,2020|a"]
    first = sources[0]
    assert first.paper_id == "iclr.W1"
    assert first.kind == "table_row"
    assert first.row_number == 1 and first.path == str(DATA / "abstracts.csv")
    assert first.fields == {
        "title": "Graph networks, revisited",
        "abstract": "We study message passing on graphs. "
        "Our method improves accuracy on three benchmarks.",
        "year": "2021",
        "venue": "ICLR",
    }
    assert first.content_sha256 == sha256_text(json.dumps(first.fields, sort_keys=True))
    assert sources[1].fields["abstract"].count("\n") == 1  # a quoted multi-line cell
    assert sources[1].fields["venue"] == "NeurIPS, workshop"


def test_an_id_with_comma_or_bar_gives_a_url_safe_paper_id() -> None:
    sources, _ = read_table(DATA / "abstracts.csv", "my collection")
    paper_id = sources[2].paper_id
    assert URL_SAFE.fullmatch(paper_id), paper_id
    assert "," not in paper_id and "|" not in paper_id
    assert sources[2].external_id == "smith,2020|a"


def test_jsonl_rows_keep_extra_keys_as_text_and_skip_blank_lines() -> None:
    sources, failed = read_table(DATA / "abstracts.jsonl", "bio")
    assert failed == []
    assert [(source.external_id, source.row_number) for source in sources] == [("J1", 1), ("42", 3)]
    assert sources[0].fields["year"] == "2023"
    assert json.loads(sources[0].fields["authors"]) == ["A. Lee", "B. Kim"]
    assert sources[1].fields["note"] == ""


def test_document_from_row_is_the_abstract_in_one_section() -> None:
    sources, _ = read_table(DATA / "abstracts.csv", "iclr")
    document = document_from_row(sources[0])
    abstract = sources[0].fields["abstract"]
    assert document.paper_id == "iclr.W1"
    assert document.title == "Graph networks, revisited"
    assert document.text == document.abstract == abstract
    assert [(s.heading, s.char_start, s.char_end) for s in document.sections] == [
        ("Abstract", 0, len(abstract))
    ]
    assert document.pages == 1 and document.page_starts == [0]
    assert document.metadata == {"year": "2021", "venue": "ICLR"}
    assert document.source_path == str(DATA / "abstracts.csv")
    assert document.references == []


def test_missing_required_columns_fail_the_whole_file(tmp_path: Path) -> None:
    path = write(tmp_path, "t.csv", "id,name,summary\n1,a,b\n2,c,d\n")
    sources, failed = read_table(path, "c")
    assert sources == []
    assert len(failed) == 1
    assert failed[0].paper_id is None and failed[0].row is None and failed[0].file == str(path)
    assert "'title'" in failed[0].reason and "'abstract'" in failed[0].reason


def test_required_columns_match_in_any_case(tmp_path: Path) -> None:
    path = write(tmp_path, "t.csv", "ID,Title,Abstract,Notes\n1,A title,An abstract.,x\n")
    sources, failed = read_table(path, "c")
    assert failed == []
    assert sources[0].fields == {"title": "A title", "abstract": "An abstract.", "Notes": "x"}


def test_duplicate_ids_fail_the_later_rows(tmp_path: Path) -> None:
    rows = ["id,title,abstract", "a,T1,A1.", "b,T2,A2.", "a,T3,A3.", "c,T4,A4.", "a,T5,A5."]
    sources, failed = read_table(write(tmp_path, "t.csv", "\n".join(rows) + "\n"), "c")
    assert [source.external_id for source in sources] == ["a", "b", "c"]
    assert [(f.row, f.reason) for f in failed] == [
        (3, "duplicate id 'a' (first at row 1)"),
        (5, "duplicate id 'a' (first at row 1)"),
    ]
    # The paper id belongs to the row that succeeded, not to the duplicates.
    assert all(f.paper_id is None for f in failed)


def test_ids_that_slug_to_the_same_paper_id_fail_the_later_row(tmp_path: Path) -> None:
    path = write(tmp_path, "t.csv", 'id,title,abstract\n"a,b",T,A.\n"a|b",T,A.\n')
    sources, failed = read_table(path, "c")
    assert len(sources) == 1
    assert failed[0].row == 2 and "same paper id" in failed[0].reason


def test_empty_title_or_abstract_fails_that_row_only(tmp_path: Path) -> None:
    path = write(tmp_path, "t.csv", "id,title,abstract\n1,,An abstract.\n2,T,  \n3,T,Fine.\n")
    sources, failed = read_table(path, "c")
    assert [source.external_id for source in sources] == ["3"]
    assert [(f.row, f.reason, f.paper_id) for f in failed] == [
        (1, "empty title", "c.1"),
        (2, "empty abstract", "c.2"),
    ]


def test_undecodable_bytes_fail_only_their_rows(tmp_path: Path) -> None:
    latin1 = "id,title,abstract\n1,Caf\u00e9 culture,About caf\u00e9s.\n2,Plain,Plain ASCII.\n"
    sources, failed = read_table(write(tmp_path, "t.csv", latin1.encode("latin-1")), "c")
    assert [source.external_id for source in sources] == ["2"]
    assert len(failed) == 1 and failed[0].row == 1
    assert "UTF-8" in failed[0].reason and "re-save" in failed[0].reason


def test_a_utf8_byte_order_mark_is_not_part_of_the_header(tmp_path: Path) -> None:
    path = write(tmp_path, "t.csv", "\ufeffid,title,abstract\n1,T,A.\n".encode())
    sources, failed = read_table(path, "c")
    assert failed == [] and sources[0].external_id == "1"


def test_malformed_json_line_fails_that_row(tmp_path: Path) -> None:
    lines = [
        '{"id": "1", "title": "T", "abstract": "A."}',
        '{"id": "2", "title": "T", "abstract": ',
        '["not", "an", "object"]',
        '{"id": "4", "title": "T", "abstract": "A."}',
    ]
    sources, failed = read_table(write(tmp_path, "t.jsonl", "\n".join(lines)), "c")
    assert [source.external_id for source in sources] == ["1", "4"]
    assert [f.row for f in failed] == [2, 3]
    assert failed[0].reason.startswith("malformed JSON")
    assert "JSON object" in failed[1].reason


def test_jsonl_without_a_required_key_anywhere_fails_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "t.jsonl", '{"id": "1", "title": "T"}\n{"id": "2", "title": "U"}\n')
    sources, failed = read_table(path, "c")
    assert sources == [] and len(failed) == 1 and failed[0].row is None
    assert "'abstract'" in failed[0].reason


@pytest.mark.parametrize(
    ("name", "content", "word"),
    [
        ("empty.csv", "", "empty"),
        ("blank.jsonl", "\n\n", "empty"),
        ("header_only.csv", "id,title,abstract\n", "no rows"),
    ],
)
def test_empty_files_fail_as_a_whole(tmp_path: Path, name: str, content: str, word: str) -> None:
    sources, failed = read_table(write(tmp_path, name, content), "c")
    assert sources == [] and len(failed) == 1
    assert failed[0].paper_id is None and failed[0].row is None and word in failed[0].reason


def test_a_missing_file_fails_as_a_whole(tmp_path: Path) -> None:
    sources, failed = read_table(tmp_path / "absent.csv", "c")
    assert sources == [] and len(failed) == 1 and "cannot read" in failed[0].reason


def test_a_row_with_too_many_values_fails(tmp_path: Path) -> None:
    path = write(tmp_path, "t.csv", "id,title,abstract\n1,T,A.,extra\n2,T,A.\n")
    sources, failed = read_table(path, "c")
    assert [source.external_id for source in sources] == ["2"]
    assert failed[0].row == 1 and "4 values" in failed[0].reason


def test_every_reason_is_one_line(tmp_path: Path) -> None:
    lines = ['{"id": "1", "title": "T", "abstract": "A."}', "{broken", '{"id": "1"}']
    _, failed = read_table(write(tmp_path, "t.jsonl", "\n".join(lines)), "c")
    assert len(failed) == 2
    assert all("\n" not in f.reason and f.reason for f in failed)


def test_an_unknown_suffix_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"\.csv or \.jsonl"):
        read_table(write(tmp_path, "t.tsv", "id\ttitle\tabstract\n"), "c")


def test_the_shipped_iclr_tables_read_cleanly() -> None:
    corpora = Path(__file__).resolve().parents[1] / "corpora"
    full, full_failed = read_table(corpora / "iclr-abstracts" / "iclr_abstracts.csv", "iclr")
    demo, demo_failed = read_table(
        corpora / "iclr-abstracts-demo" / "iclr_abstracts_demo.csv", "iclr-demo"
    )
    assert full_failed == [] and demo_failed == []
    assert len(full) == 618 and len(demo) == 40
    assert [s.external_id for s in demo] == [s.external_id for s in full[:40]]
    assert set(full[0].fields) == {"title", "abstract", "tldr_first", "tldrs_all"}


@pytest.mark.parametrize(
    ("abstract", "prose"),
    [
        (
            "[Purpose] We test X. [Subjects] Forty adults took part. [Results] X helped.",
            "We test X.\n\nForty adults took part.\n\nX helped.",
        ),
        (
            "BACKGROUND Risk is high. METHODS AND RESULTS we enrolled 40 adults. "
            "OUTCOME MEASURE - Death. CONCLUSIONS: Treat early.",
            "Risk is high.\n\nwe enrolled 40 adults.\n\nDeath.\n\nTreat early.",
        ),
        (
            "Background: Risk is high. Main outcome measures: death at one year.",
            "Risk is high.\n\ndeath at one year.",
        ),
    ],
)
def test_the_labels_of_a_structured_abstract_are_dropped_its_parts_kept(
    abstract: str, prose: str
) -> None:
    assert without_part_labels(abstract) == prose


@pytest.mark.parametrize(
    "abstract",
    [
        # Capitals that are not a label, a label word inside a sentence, a sentence about
        # backgrounds, square brackets of mathematics, a bracket inside a sentence.
        "BERT Models read text. DNA Methylation matters.",
        "We report RESULTS from many runs. Background subtraction is hard.",
        "Scores lie in [0, 1]. We compare [Methods] of two kinds.",
    ],
)
def test_prose_that_only_looks_like_a_label_is_kept(abstract: str) -> None:
    assert without_part_labels(abstract) == abstract


def test_a_structured_row_becomes_its_prose_without_labels(tmp_path: Path) -> None:
    table = write(
        tmp_path,
        "labelled.csv",
        "id,title,abstract\nx1,Trial,BACKGROUND Risk is high. RESULTS: Treatment helped.\n",
    )
    (source,), _ = read_table(table, "bio")
    document = document_from_row(source)
    assert document.text == document.abstract == "Risk is high.\n\nTreatment helped."
    assert source.fields["abstract"] == "BACKGROUND Risk is high. RESULTS: Treatment helped."
