"""An entry's files: the PDFs its `file`, `pdf`, `local-url` and BibDesk `bdsk-file-N` fields
name, and the folders JabRef resolves relative paths in."""

from __future__ import annotations

import base64
import plistlib
import re
from pathlib import Path
from urllib.parse import unquote, urlparse

FILE_FIELDS = ("file", "pdf", "local-url")


_JABREF_FILE_DIRECTORY = re.compile(
    r"@comment\s*\{\s*jabref-meta:\s*fileDirectory(-[^:]*)?:(.*?);?\s*\}", re.I
)


def _jabref_file_directories(text: str, folder: Path) -> list[Path]:
    """The folders JabRef resolves the library's relative file paths in, as its metadata
    comments set them (`@Comment{jabref-meta: fileDirectory:papers;}`, the library's own
    before a user's), relative to the `.bib`'s folder."""
    found = sorted(
        _JABREF_FILE_DIRECTORY.finditer(text), key=lambda match: match.group(1) is not None
    )
    return [folder / Path(_unescaped(match.group(2).strip())).expanduser() for match in found]


def entry_pdfs(values: dict[str, str], folders: list[Path]) -> tuple[list[Path], list[str]]:
    """The PDFs an entry's file fields name (a relative one in the first of `folders` that
    holds it), and what could not be read of them."""
    pdfs: list[Path] = []
    problems: list[str] = []
    for name in (*FILE_FIELDS, *sorted(n for n in values if n.startswith("bdsk-file-"))):
        if name not in values:
            continue
        if name.startswith("bdsk-file-"):
            path = _bibdesk_path(values[name])
            if path is None:
                problems.append(f"its {name} field cannot be read")
                continue
            records = [(path, "")]
        elif name == "local-url":
            records = [(values[name], "")]
        else:
            records = file_field(values[name])
        for path, kind in records:
            if path.lower().endswith(".pdf") or "pdf" in kind.lower():
                pdfs.append(_resolved(path, folders))
    return pdfs, problems


def file_field(raw: str) -> list[tuple[str, str]]:
    """(path, file type) of each file a `file` field lists: `path`, `:path:PDF`,
    `Description:path:application/pdf`, separated by `;`; JabRef's escapes (`\\:`, `\\;`,
    `\\\\`) and Mendeley's (`{\\_}`, `$\\backslash$`) undone."""
    raw = raw.replace("$\\backslash$", "\\\\").replace("{\\_}", "_").replace("\\_", "_")
    found: list[tuple[str, str]] = []
    for record in _split_unescaped(raw, ";"):
        parts = [_unescaped(part).strip() for part in _split_unescaped(record, ":")]
        if not any(parts):
            continue
        if len(parts) == 1:
            path, kind = parts[0], ""
        elif len(parts) == 2:
            if len(parts[0]) == 1 and parts[0].isalpha():  # a Windows drive: C:\...
                path, kind = ":".join(parts), ""
            elif parts[1].lower().endswith(".pdf"):  # Description:path
                path, kind = parts[1], ""
            else:  # path:type
                path, kind = parts
        else:
            path, kind = ":".join(parts[1:-1]), parts[-1]
        if path:
            found.append((path, kind))
    return found


def _split_unescaped(text: str, separator: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text):
            current.append(text[index : index + 2])
            index += 2
            continue
        if char == separator:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
        index += 1
    parts.append("".join(current))
    return parts


def _unescaped(text: str) -> str:
    return re.sub(r"\\([\\:;])", r"\1", text)


def _resolved(path: str, folders: list[Path]) -> Path:
    """A file field's path as a file: a `file://` URL decoded, `~` expanded, a relative path
    in the first of `folders` that holds it (or, as Mendeley writes absolute paths without
    their leading `/`, from the root when only that exists; else in the first folder)."""
    if path.lower().startswith("file:"):
        path = unquote(urlparse(path).path)
    given = Path(path).expanduser()
    if given.is_absolute():
        return given
    candidates = [folder / given for folder in folders] + [Path("/") / given]
    return next((candidate for candidate in candidates if candidate.is_file()), candidates[0])


def _bibdesk_path(raw: str) -> str | None:
    """The `relativePath` of BibDesk's `bdsk-file-N`: a base64 property list (a keyed archive,
    or a plain dictionary)."""
    try:
        archive = plistlib.loads(base64.b64decode("".join(raw.split())))
    except Exception:  # any undecodable value: the entry says it cannot be read
        return None
    if not isinstance(archive, dict):
        return None
    direct = archive.get("relativePath")
    if isinstance(direct, str):
        return direct
    objects = archive.get("$objects")
    if not isinstance(objects, list):
        return None
    for item in objects:
        if isinstance(item, dict) and "relativePath" in item:
            target = item["relativePath"]
            if isinstance(target, plistlib.UID) and target.data < len(objects):
                target = objects[target.data]
            return target if isinstance(target, str) else None
    return None
