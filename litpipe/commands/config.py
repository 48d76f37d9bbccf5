"""`litpipe config` (every setting in force, with where it came from) and `litpipe init` (a
commented litpipe.toml holding every setting at its default)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from litpipe.files import write_atomically
from litpipe.settings import Settings


def config_command(settings: Settings, flags: dict[str, Any]) -> int:
    """`litpipe config`: every setting in force, each with where it came from."""
    from litpipe.config import config_lines

    print("\n".join(config_lines(settings, flags)))
    return 0


def init_command(path: Path, force: bool) -> int:
    """`litpipe init`: a commented litpipe.toml at `path`, unless one is there (`force`)."""
    from litpipe.config import commented_toml

    if path.exists() and not force:
        print(f"litpipe init: {path} exists; --force replaces it", file=sys.stderr)
        return 2
    write_atomically(path, commented_toml().encode("utf-8"))
    print(f"Wrote {path}: every setting, commented out at its default.")
    return 0
