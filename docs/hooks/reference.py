"""MkDocs hook: the pages generated from the code, so that they cannot drift from it.

- `<!-- settings-reference -->`: every setting of `litpipe.settings.Settings`, by group, with its
  type, default, environment variable and description (a setting without a description fails
  the build);
- `<!-- cli-reference -->`: every command and flag of `litpipe`, from its argparse parser;
- `<!-- asset-graph -->`: the Dagster asset graph as an SVG, from the definitions themselves.

Run by `mkdocs build` (mkdocs.yml `hooks:`); the functions are also what the tests check.
"""

from __future__ import annotations

import argparse
import html
import json
from collections.abc import Iterator
from typing import Any

from mkdocs.exceptions import PluginError

from litpipe.cli import build_parser
from litpipe.config import Setting, settings_fields
from litpipe.settings import Settings


def settings_reference() -> str:
    """Markdown: one section per group, one row per setting."""
    missing = [setting.path for setting in settings_fields() if not setting.field.description]
    if missing:
        raise PluginError(f"settings without a description: {', '.join(missing)}")
    defaults = Settings.model_construct().model_dump(mode="json")
    lines: list[str] = [
        "Every setting, as `litpipe config` prints it. Set one with `--set KEY=VALUE` on any "
        "command, in `litpipe.toml` (`litpipe init` writes one with every setting commented), "
        "or by its environment variable; a flag wins over the environment, which wins over the "
        "file, which wins over a preset.",
    ]
    group: str | None = ""
    for setting in settings_fields():
        if setting.group != group:
            group = setting.group
            title = f"`[{group}]`" if group else "Top level"
            lines += ["", f"## {title}", ""]
            doc = _group_doc(group)
            lines += [doc, ""] if doc else []
            lines += ["| setting | type | default | environment | description |"]
            lines += ["|---|---|---|---|---|"]
        lines.append(
            f"| `{setting.path}` | {_cell(setting.type_name)} | "
            f"{_cell(_default(setting, defaults))} | `{setting.environment_name}` | "
            f"{_cell(' '.join((setting.field.description or '').split()))} |"
        )
    return "\n".join(lines) + "\n"


def cli_reference() -> str:
    """Markdown: each command (and `eval`'s each evaluation) with its flags."""
    parser = build_parser()
    lines = [f"`{parser.prog}`: {' '.join((parser.description or '').split())}", ""]
    for path, command, summary in _commands(parser, [parser.prog]):
        lines += (
            [f"## `{' '.join(path)}`", "", summary, ""]
            if summary
            else [
                f"## `{' '.join(path)}`",
                "",
            ]
        )
        rows = list(_flags(command))
        if rows:
            lines += ["| argument | what it is |", "|---|---|", *rows, ""]
    return "\n".join(lines) + "\n"


def command_paths() -> list[str]:
    """`litpipe run`, `litpipe eval mais`, ...: every command the reference lists."""
    parser = build_parser()
    return [" ".join(path) for path, _, _ in _commands(parser, [parser.prog])]


def flags_of(path: str) -> list[str]:
    """The option strings and positional names of one command (`litpipe eval mais`)."""
    parser = build_parser()
    for found, command, _ in _commands(parser, [parser.prog]):
        if " ".join(found) == path:
            return [
                name
                for action in command._actions
                if not isinstance(action, argparse._SubParsersAction | argparse._HelpAction)
                for name in (action.option_strings or [action.dest])
            ]
    raise KeyError(path)


def asset_graph_svg() -> str:
    """The asset graph, each asset in the column of its longest path from a root, an arrow
    from each asset to those reading it."""
    from litpipe.defs.definitions import build_definitions
    from litpipe.settings.groups import settings_groups

    graph = build_definitions(**settings_groups(Settings())).resolve_asset_graph()
    keys = sorted(graph.get_all_asset_keys(), key=lambda key: key.to_user_string())
    parents = {key: [p for p in graph.get(key).parent_keys if p in keys] for key in keys}
    depth: dict[Any, int] = {}

    def depth_of(key: Any) -> int:
        if key not in depth:
            depth[key] = 1 + max((depth_of(p) for p in parents[key]), default=-1)
        return depth[key]

    columns: dict[int, list[Any]] = {}
    for key in keys:
        columns.setdefault(depth_of(key), []).append(key)
    width, height, gap_x, gap_y = 190, 26, 60, 12
    position = {
        key: (column * (width + gap_x) + 10, row * (height + gap_y) + 10)
        for column, members in columns.items()
        for row, key in enumerate(members)
    }
    total_w = max(x for x, _ in position.values()) + width + 10
    total_h = max(y for _, y in position.values()) + height + 10
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {total_w} {total_h}" '
        f'width="100%" role="img" aria-label="litpipe\'s asset graph">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" '
        'markerHeight="6" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#888"/></marker>'
        "</defs>",
    ]
    for key in keys:
        x2, y2 = position[key]
        for parent in parents[key]:
            x1, y1 = position[parent]
            parts.append(
                f'<line x1="{x1 + width}" y1="{y1 + height / 2}" x2="{x2}" y2="{y2 + height / 2}" '
                'stroke="#bbb" marker-end="url(#arrow)"/>'
            )
    for key in keys:
        x, y = position[key]
        node = graph.get(key)
        group = html.escape(node.group_name or "")
        name = html.escape(key.to_user_string())
        parts.append(
            f'<g><title>{name} (group {group})</title><rect x="{x}" y="{y}" width="{width}" '
            f'height="{height}" rx="5" fill="#eef3fb" stroke="#5b7db1"/>'
            f'<text x="{x + 8}" y="{y + 17}" font-family="sans-serif" font-size="12">{name}'
            "</text></g>"
        )
    parts.append("</svg>")
    return "\n".join(parts)


# MkDocs' event: each page's Markdown with its markers replaced.
GENERATED = {
    "<!-- settings-reference -->": settings_reference,
    "<!-- cli-reference -->": cli_reference,
    "<!-- asset-graph -->": asset_graph_svg,
}


def on_page_markdown(markdown: str, **_: Any) -> str:
    for marker, generate in GENERATED.items():
        if marker in markdown:
            markdown = markdown.replace(marker, generate())
    return markdown


def _commands(
    parser: argparse.ArgumentParser, path: list[str]
) -> Iterator[tuple[list[str], argparse.ArgumentParser, str]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, command in action.choices.items():
                yield [*path, name], command, " ".join(helps.get(name, "").split())
                yield from _commands(command, [*path, name])


def _flags(command: argparse.ArgumentParser) -> Iterator[str]:
    for action in command._actions:
        if isinstance(action, argparse._SubParsersAction | argparse._HelpAction):
            continue
        names = ", ".join(f"`{name}`" for name in action.option_strings) or f"`{action.dest}`"
        if action.option_strings and action.nargs != 0:
            names += f" `{action.metavar or action.dest.upper()}`"
        described = " ".join((action.help or "").split())
        if action.choices:
            described += " (one of: " + ", ".join(f"`{c}`" for c in action.choices) + ")"
        yield f"| {names} | {_cell(described)} |"


def _group_doc(group: str | None) -> str:
    if group is None:
        return ""
    model = Settings.model_fields[group].annotation
    return " ".join((getattr(model, "__doc__", "") or "").split())


def _default(setting: Setting, defaults: dict[str, Any]) -> str:
    value: Any = defaults
    for part in setting.path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return "not set" if value is None else f"`{json.dumps(value)}`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
