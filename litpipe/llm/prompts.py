"""The prompt library: one Markdown file per agent, overridable per file from a folder.

A stage with one agent has its prompt at `litpipe/prompts/<stage>.md`; a stage with several
keeps theirs together in `litpipe/prompts/<stage>/<agent>.md`.

A prompt file is a list of chat messages. A line `## system`, `## user` or `## assistant` (alone
on its line) starts a message with that role; the message is every line up to the next such
line. HTML comments (`<!-- ... -->`) are stripped first, so each file documents itself in one.
`{{name}}` is a placeholder: double braces, so JSON examples with single braces stay literal.

Paper text reaches a prompt only through `fence`, and every prompt says that fenced text is data
from a paper, never instructions to follow.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from importlib import resources
from pathlib import Path

PACKAGED_PROMPTS = "litpipe/prompts"
_NAME = re.compile(r"[a-z][a-z0-9_]*")
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_ROLE_LINE = re.compile(r"^##[ \t]+(system|user|assistant)[ \t]*$", re.I | re.M)
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


class PromptError(ValueError):
    """A prompt file that cannot be rendered: bad layout, or placeholders and values that differ."""


class PromptNotFoundError(FileNotFoundError):
    """No prompt file for an agent, in the override folder or in the package."""


def fence(text: str, label: str = "paper") -> str:
    """`text` between `<label>` and `</label>` lines, with any such tag inside it defused.

    The text cannot close the fence (or open a new one) because every `<label`/`</label` it
    contains, in any case and spacing, has its `<` replaced by `&lt;`.
    """
    if not _NAME.fullmatch(label):
        raise ValueError(f"a fence label is a lower-case word, not {label!r}")
    defused = re.sub(rf"<(?=\s*/?\s*{label}\b)", "&lt;", text, flags=re.I)
    return f"<{label}>\n{defused}\n</{label}>"


@functools.cache
def packaged_path(agent: str) -> str:
    """The packaged prompt's path below `litpipe/prompts`: `<agent>.md`, or
    `<stage>/<agent>.md` for an agent of a stage that has several (its folder groups them)."""
    root = resources.files("litpipe").joinpath("prompts")
    for folder in root.iterdir():
        if folder.is_dir() and folder.joinpath(f"{agent}.md").is_file():
            return f"{folder.name}/{agent}.md"
    return f"{agent}.md"


class PromptLibrary:
    """The effective prompt of each agent: its file in `override_dir` if present (laid out as
    the packaged ones, or flat as `<agent>.md`), else the packaged one."""

    def __init__(self, override_dir: Path | None = None) -> None:
        self.override_dir = override_dir

    def _override(self, agent: str) -> Path | None:
        if self.override_dir is None:
            return None
        folder = Path(self.override_dir)
        candidates = [folder / packaged_path(agent), folder / f"{agent}.md"]
        return next((path for path in candidates if path.is_file()), candidates[0])

    def text(self, agent: str) -> str:
        """The effective prompt file's text, read afresh (an edited override counts at once)."""
        if not _NAME.fullmatch(agent):
            raise ValueError(f"an agent name is a lower-case identifier, not {agent!r}")
        override = self._override(agent)
        if override is not None and override.is_file():
            return override.read_text("utf-8")
        packaged = resources.files("litpipe").joinpath("prompts", *packaged_path(agent).split("/"))
        if packaged.is_file():
            return packaged.read_text("utf-8")
        looked = [f"{override} (llm.prompts_dir)"] if override is not None else []
        looked.append(f"{PACKAGED_PROMPTS}/{packaged_path(agent)} (packaged)")
        raise PromptNotFoundError(f"no prompt for agent {agent!r}: looked in {', '.join(looked)}")

    def source(self, agent: str) -> str:
        """Where the effective prompt comes from: the override file's path, or `package`."""
        override = self._override(agent)
        return str(override) if override is not None and override.is_file() else "package"

    def digest(self, agent: str) -> str:
        """sha256 of the prompt's messages, comments left out: part of the code version of the
        stage using it, so editing a prompt's comment stales nothing."""
        messages = _messages(agent, self.text(agent))
        return hashlib.sha256(json.dumps(messages, sort_keys=True).encode("utf-8")).hexdigest()

    def render(self, agent: str, **values: str) -> list[dict[str, str]]:
        """The prompt as chat messages, every `{{name}}` replaced by `values[name]`.

        Values are inserted in one pass and never scanned again, so braces in paper text stay
        as they are. A placeholder without a value, or a value without a placeholder, is an error.
        """
        for name, value in values.items():
            if not isinstance(value, str):
                raise TypeError(f"prompt {agent!r}: value {name!r} must be text, not {type(value)}")
        messages = _messages(agent, self.text(agent))
        wanted = {name for m in messages for name in _PLACEHOLDER.findall(m["content"])}
        missing, unused = sorted(wanted - values.keys()), sorted(values.keys() - wanted)
        if missing or unused:
            problems = [f"no value for {{{{{name}}}}}" for name in missing]
            problems += [f"no placeholder {{{{{name}}}}} for the value given" for name in unused]
            raise PromptError(f"prompt {agent!r} ({self.source(agent)}): {'; '.join(problems)}")
        return [
            {
                "role": m["role"],
                "content": _PLACEHOLDER.sub(lambda match: values[match.group(1)], m["content"]),
            }
            for m in messages
        ]


def _messages(agent: str, text: str) -> list[dict[str, str]]:
    text = _COMMENT.sub("", text)
    roles = list(_ROLE_LINE.finditer(text))
    if not roles:
        raise PromptError(f"prompt {agent!r} has no `## system` or `## user` line")
    if text[: roles[0].start()].strip():
        raise PromptError(f"prompt {agent!r} has text before its first `## <role>` line")
    messages = []
    for role, following in zip(roles, [*roles[1:], None], strict=True):
        end = following.start() if following is not None else len(text)
        messages.append({"role": role.group(1).lower(), "content": text[role.end() : end].strip()})
    if not any(m["role"] == "user" for m in messages):
        raise PromptError(f"prompt {agent!r} has no `## user` message")
    return messages
