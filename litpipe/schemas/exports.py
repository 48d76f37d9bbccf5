"""The formats a cited text is exported to for a manuscript (`litpipe export`, `related-work
--to`): named here, below the writers, so that the command line lists them without importing
them."""

from __future__ import annotations

from typing import Literal

ExportFormat = Literal["latex", "pandoc", "docx", "bibtex", "csl-json"]
EXPORT_FORMATS: tuple[ExportFormat, ...] = ("latex", "pandoc", "docx", "bibtex", "csl-json")
