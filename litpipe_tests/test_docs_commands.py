"""Every command README.md and docs/ show, run as the docs write it (issue 43, point 9).

A command is a line of a ```sh (bash, console, shell) block, its continuation lines joined and
its comment dropped, or a line elsewhere that starts with `litpipe COMMAND` or `make TARGET`.
Each `litpipe` command runs through the CLI's `main`, in the order a reader builds a home (every
`run` first, then what reads the home, the backfills last), on one scratch home and the offline
engine, with the docs' placeholders re-pointed at data inside the repository (`PATHS`); `make
demo` runs its recipe's commands, from the Makefile, first. Whatever cannot run here is skipped
for a reason `SKIPPED` states, and a skipped `litpipe` command is still parsed by the CLI, so a
renamed flag fails it. A command the docs gain with neither a way to run nor a reason fails the
test, as does an argument naming a path that neither the repository holds nor `PATHS` maps.
"""

from __future__ import annotations

import contextlib
import functools
import io
import re
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from litpipe.cli import build_parser, main
from litpipe_tests.test_bibtex import write_refs
from litpipe_tests.test_docs import reference_hook
from litpipe_tests.test_zotero import write_library

REPOSITORY = Path(__file__).resolve().parents[1]
DOCUMENTS = [REPOSITORY / "README.md", *sorted((REPOSITORY / "docs").rglob("*.md"))]
MAKEFILE = REPOSITORY / "Makefile"
SHELL_FENCES = {"bash", "sh", "console", "shell"}

# The docs' placeholders and data outside the repository, and what stands in for each (paths
# relative to the repository's root, where every command runs).
PATHS = {
    "PATH/TO/PDFS": "corpora/biology-cc-by",
    "search.csv": "litpipe_tests/data/tables/abstracts.csv",
    "my-pairs.jsonl": "litpipe_tests/data/gate_pairs.jsonl",
    "../shared/data/scifact": "litpipe_tests/data/beir-tiny",
    "../shared/data/citebench-related-work": "litpipe_tests/data/related-work-tiny",
    # The demo's 40 ICLR abstracts for the 619 (minutes of debate scoring, offline).
    "corpora/iclr-abstracts/iclr_abstracts.csv": (
        "corpora/iclr-abstracts-demo/iclr_abstracts_demo.csv"
    ),
}
LITQA2 = REPOSITORY / "litpipe_tests" / "data" / "litqa2" / "litqa2_subset_with_pdfs.jsonl"
# Placeholders for what the test writes into its scratch `~` (`$HOME`): a saved
# sentence-transformers folder (the tiny random model), a BibTeX file with its PDFs, the first two
# of LitQA2's nine questions (each costs MAIS loops; the nine are in the repository), and
# `~/Zotero`, a Zotero library (litpipe_tests/test_zotero.py), which needs no mapping.
SCRATCH_PATHS = {
    "/models/my-model": "models/my-model",
    "refs.bib": "library/refs.bib",
    "../shared/data/litqa2-cc-by/litqa2_subset_with_pdfs.jsonl": "litqa2/first_two.jsonl",
}
# Other arguments: the test library's collection that stands for the docs' "Thesis".
ARGUMENTS = {"Thesis": "Reading"}

# Why a command does not run here, by a pattern of the command (its environment first).
SKIPPED: list[tuple[str, str]] = [
    (r"^export ", "an export: applied to the commands after it in its block"),
    (r"^make (test|lint|docs)$", "the project's own checks (the suite, ruff and mypy, the site)"),
    (
        r"(^|\s)litpipe ui\b|^make ui$|dagster dev|dagster-webserver|dagster-daemon run|"
        r"llama_server serve",
        "serves until stopped: test_ui_pages.py, test_ui_browser.py and test_llama_server.py "
        "start and stop their own",
    ),
    (
        r"^(docker|kubectl|helm) ",
        "needs a container registry or a Kubernetes cluster (test_deploy.py checks the image "
        "and the chart's values)",
    ),
    (
        r"DAGSTER_PG_|LANCEDB_URI=s3|^mkdir -p /srv/",
        "needs the PostgreSQL server or object store its block names (test_postgres.py runs a "
        "PostgreSQL of its own)",
    ),
    (
        r"--api-base http://localhost|--model ollama/",
        "needs a model server on localhost (llama.cpp, vLLM, Ollama, LM Studio); "
        "test_llama_server.py runs a real one",
    ),
    (r"OPENAI_API_KEY|--model gpt-|\"gpt-4o\"", "calls a hosted model: needs its API key"),
    (r"^python -m pytest\b", "the test suite itself"),
    (
        r"^python benchmarks/",
        "a benchmark: minutes on the shared data sets, run by hand for the docs' figures",
    ),
    (r"--embedder BAAI/", "a model on the Hugging Face Hub, which this offline machine lacks"),
    (
        r"^litpipe export .*--to docx",
        "runs the pandoc program, which a user's machine may lack: test_export.py runs it "
        "where pandoc is installed (CI installs it)",
    ),
]
# The exit status the docs give a command that does not exit 0 here, and why it is that one.
EXIT_CODES: list[tuple[str, int, str]] = [
    (
        r"^litpipe backfill .*--gate ",
        3,
        "the gate keeps MiniLM: the tiny model's random vectors rank the pairs worse, and "
        "docs/how-to/embedders-and-backfill.md gives 3 for a kept embedder",
    ),
]
# The order a reader builds a home in: commands that read a home after those that fill it, the
# backfills (which leave the instance's latest materializations to another embedder) last.
STAGES = (
    "run",
    "status",
    "key",
    "config",
    "diff",
    "retract",
    "ask",
    "related-work",
    "export",
    "eval",
    "backfill",
)


@dataclass(frozen=True)
class DocCommand:
    """One command as a document writes it."""

    where: str
    text: str
    environment: dict[str, str] = field(default_factory=dict)

    @property
    def words(self) -> list[str]:
        """The command's words, `.venv/bin/` dropped from its program."""
        words = shlex.split(self.text, comments=True)
        return [words[0].removeprefix(".venv/bin/"), *words[1:]]

    @property
    def shown(self) -> str:
        """What the patterns of `SKIPPED` and `EXIT_CODES` match: environment, then words."""
        return " ".join([*(f"{n}={v}" for n, v in self.environment.items()), *self.words])


@dataclass(frozen=True)
class Plan:
    command: DocCommand
    skip_reason: str | None = None
    exit_code: int = 0
    exit_reason: str = ""

    @property
    def runs(self) -> bool:
        return self.skip_reason is None and self.command.words[0] == "litpipe"


def _split_assignments(words: list[str]) -> tuple[dict[str, str], list[str]]:
    """`NAME=value ... command`: the assignments, and the command."""
    assignments: dict[str, str] = {}
    while words and re.fullmatch(r"[A-Za-z_]\w*=.*", words[0]):
        name, _, value = words.pop(0).partition("=")
        assignments[name] = value
    return assignments, words


def _command(where: str, line: str, exports: dict[str, str]) -> DocCommand | None:
    """The command of a shell line (None for a comment), its environment the block's exports
    so far and its own assignments; an `export` adds to `exports`."""
    assignments, words = _split_assignments(shlex.split(line, comments=True))
    if not words:
        return None
    if words[0] == "export":
        exports.update(_split_assignments(words[1:])[0])
        return DocCommand(where, shlex.join(words))
    return DocCommand(where, shlex.join(words), {**exports, **assignments})


@functools.cache
def litpipe_commands() -> tuple[str, ...]:
    """`run`, `eval`, ...: the CLI's commands, as the command reference lists them."""
    paths = reference_hook().command_paths()
    return tuple(dict.fromkeys(path.split()[1] for path in paths if path.count(" ")))


def commands_in(where: str, text: str, make_targets: set[str]) -> list[DocCommand]:
    """The commands of one document (`where`: its name, for `file:line`). In a console block
    only the lines after a `$ ` prompt are commands; the others are what they print."""
    # `litpipe run ...`, not what a command prints (`litpipe run: no space left ...`).
    starts = [rf"(\.venv/bin/)?litpipe ({'|'.join(map(re.escape, litpipe_commands()))})(\s|$)"]
    # `make TARGET`, alone or with a comment: "make NAME the default" is prose.
    targets = "|".join(map(re.escape, make_targets))
    starts += [rf"make ({targets})(\s+#.*)?$"] if make_targets else []
    prose_command = re.compile(rf"^(\$ )?({'|'.join(starts)})")
    commands: list[DocCommand] = []
    fence: str | None = None
    exports: dict[str, str] = {}
    pending: list[str] = []
    start = 0
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        opening = re.match(r"```(\w*)", stripped)
        if opening:
            fence = None if fence is not None else (opening.group(1) or "text")
            exports = {}
            continue
        output = fence == "console" and not pending and not stripped.startswith("$ ")
        if (fence in SHELL_FENCES and not output) or prose_command.match(stripped):
            start = start if pending else number
            if stripped.endswith("\\"):
                pending.append(stripped[:-1])
                continue
            found = _command(
                f"{where}:{start}", " ".join([*pending, stripped]).removeprefix("$ "), exports
            )
            pending = []
            if found is not None:
                commands.append(found)
    return commands


def make_targets() -> set[str]:
    (phony,) = re.findall(r"^\.PHONY:(.*)$", MAKEFILE.read_text("utf-8"), flags=re.M)
    return set(phony.split())


def make_recipe(target: str, shown_at: str) -> list[DocCommand]:
    """The commands of a Makefile target's recipe, `$(BIN)/` as `.venv/bin/`, each placed at its
    Makefile line and where the docs show the target."""
    lines = MAKEFILE.read_text("utf-8").splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith(f"{target}:"))
    commands = []
    for number, line in enumerate(lines[start + 1 :], start + 2):
        if not line.startswith("\t"):
            break
        where = f"Makefile:{number} (make {target}, {shown_at})"
        found = _command(where, line.replace("$(BIN)/", ".venv/bin/"), {})
        if found is not None:
            commands.append(found)
    return commands


def documented_commands() -> list[DocCommand]:
    """Every command of README.md and docs/, `make demo` as its recipe's commands."""
    targets = make_targets()
    found: list[DocCommand] = []
    for document in DOCUMENTS:
        where = document.relative_to(REPOSITORY).as_posix()
        for command in commands_in(where, document.read_text("utf-8"), targets):
            demo = command.words == ["make", "demo"]
            found += make_recipe("demo", command.where) if demo else [command]
    return found


def plan(command: DocCommand) -> Plan:
    """Skipped for the first reason of `SKIPPED` that matches, else run, to exit as
    `EXIT_CODES` says (a command other than litpipe's with no reason is `unplanned`)."""
    for pattern, reason in SKIPPED:
        if re.search(pattern, command.shown):
            return Plan(command, skip_reason=reason)
    for pattern, code, reason in EXIT_CODES:
        if re.search(pattern, command.shown):
            return Plan(command, exit_code=code, exit_reason=reason)
    return Plan(command)


def unplanned(plans: list[Plan]) -> list[str]:
    return [
        f"{p.command.where}: {p.command.text}"
        for p in plans
        if p.skip_reason is None and not p.runs
    ]


def arguments(command: DocCommand, scratch: Path) -> list[str]:
    """The command's arguments to `litpipe`, its placeholders re-pointed."""
    mapped = {
        **PATHS,
        **{name: str(scratch / path) for name, path in SCRATCH_PATHS.items()},
        **ARGUMENTS,
    }
    return [mapped.get(word, word) for word in command.words[1:]]


def missing_paths(argv: list[str], scratch: Path) -> list[str]:
    """The arguments that name a path (a `/` in them, or a file's suffix) that is not there."""
    return [
        word
        for word in argv
        if (("/" in word and "://" not in word) or re.search(r"\.(csv|jsonl|bib|pdf)$", word))
        and not word.startswith("-")
        and not (REPOSITORY / Path(word.replace("~", str(scratch), 1))).exists()
    ]


def usage_error(argv: list[str]) -> str | None:
    """What the CLI's parser says of `argv` when it refuses it (its last line), else None."""
    said = io.StringIO()
    try:
        with contextlib.redirect_stderr(said):
            build_parser().parse_args(argv)
    except SystemExit:
        return said.getvalue().strip().splitlines()[-1]
    return None


def once_each(plans: list[Plan]) -> list[tuple[Plan, str]]:
    """Each distinct command (its words and environment) once, with every place that shows it."""
    first: dict[str, Plan] = {}
    places: dict[str, list[str]] = {}
    for planned in plans:
        first.setdefault(planned.command.shown, planned)
        places.setdefault(planned.command.shown, []).append(planned.command.where)
    return [(planned, ", ".join(places[key])) for key, planned in first.items()]


def describe(plans: list[Plan]) -> str:
    return "\n".join(
        f"skip  {where}: {p.command.text}  ({p.skip_reason})"
        for p, where in once_each(plans)
        if p.skip_reason is not None
    )


def test_commands_are_read_from_shell_blocks_and_lines_that_start_with_one() -> None:
    text = (
        "litpipe is free software.\n"
        "```sh\n"
        "export LITPIPE_X=1   # for the next one\n"
        ".venv/bin/litpipe status      # what is materialized\n"
        "                              # (a comment's second line)\n"
        "A=b .venv/bin/litpipe run \\\n"
        '  papers/ --idea "two words"\n'
        "```\n"
        "```text\n"
        "litpipe      45.78    13.44\n"
        "litpipe run: no space left on the disk holding /data\n"
        "$ litpipe ask --paper p q\n"
        "```\n"
        "make test   # the suite\n"
        "make test the waters.\n"
    )
    found = commands_in("page.md", text, {"test"})
    assert [(c.where, c.words, c.environment) for c in found] == [
        ("page.md:3", ["export", "LITPIPE_X=1"], {}),
        ("page.md:4", ["litpipe", "status"], {"LITPIPE_X": "1"}),
        ("page.md:6", ["litpipe", "run", "papers/", "--idea", "two words"], {
            "LITPIPE_X": "1", "A": "b"}),
        ("page.md:12", ["litpipe", "ask", "--paper", "p", "q"], {}),
        ("page.md:14", ["make", "test"], {}),
    ]  # fmt: skip
    console = "```console\n$ litpipe status\nEverything is up to date.\n```\n"
    assert [c.words for c in commands_in("page.md", console, set())] == [["litpipe", "status"]]
    assert make_recipe("demo", "page.md:1")[0].text.startswith(".venv/bin/litpipe run corpora/")


def test_a_command_the_docs_gain_without_a_plan_or_a_path_fails(tmp_path: Path) -> None:
    text = (
        "```sh\n"
        "frobnicate --all\n"
        ".venv/bin/litpipe run ~/new-folder --collection x\n"
        ".venv/bin/litpipe run corpora/biology-cc-by --colection x\n"
        "```\n"
    )
    plans = [plan(command) for command in commands_in("new.md", text, set())]
    assert unplanned(plans) == ["new.md:2: frobnicate --all"]
    assert missing_paths(arguments(plans[1].command, tmp_path), tmp_path) == ["~/new-folder"]
    assert usage_error(arguments(plans[2].command, tmp_path)) is not None
    assert usage_error(arguments(plans[1].command, tmp_path)) is None


def test_every_documented_command_runs_here_or_is_skipped_for_a_stated_reason(
    tmp_path: Path, tiny_model: Path
) -> None:
    plans = [plan(command) for command in documented_commands()]
    print("\n".join(f"run   {where}: {p.command.text}" for p, where in once_each(plans) if p.runs))
    print(describe(plans))
    assert unplanned(plans) == []
    # Every skipped litpipe command still parses: its flags are the CLI's.
    refused = {
        f"{p.command.where}: {p.command.text}": usage_error(arguments(p.command, tmp_path))
        for p in plans
        if p.command.words[0] == "litpipe"
    }
    assert {command: why for command, why in refused.items() if why} == {}
    scratch = _scratch_home(tmp_path, tiny_model)
    unmapped = {
        p.command.where: missing_paths(arguments(p.command, scratch), scratch)
        for p in plans
        if p.runs
    }
    assert {where: paths for where, paths in unmapped.items() if paths} == {}
    # Each stand-in stands for something the docs still say.
    said = {word for p in plans for word in p.command.words}
    assert set(PATHS) | set(SCRATCH_PATHS) | set(ARGUMENTS) <= said
    assert {"eval", "retrieval"} <= {w for p in plans if p.runs for w in p.command.words}


def _scratch_home(folder: Path, tiny_model: Path) -> Path:
    """The scratch `~`: a Zotero library, a BibTeX file with its PDFs and a saved
    sentence-transformers folder, where `SCRATCH_PATHS` maps the docs' placeholders."""
    home = folder / "user"
    write_library(home / "Zotero")
    write_refs(home / "library")
    (home / "models").mkdir()
    (home / SCRATCH_PATHS["/models/my-model"]).symlink_to(tiny_model, target_is_directory=True)
    questions = home / SCRATCH_PATHS["../shared/data/litqa2-cc-by/litqa2_subset_with_pdfs.jsonl"]
    questions.parent.mkdir()
    questions.write_text("".join(LITQA2.read_text("utf-8").splitlines(keepends=True)[:2]))
    return home


@pytest.mark.slow
def test_every_documented_litpipe_command_exits_as_the_docs_say(
    tmp_path: Path,
    tiny_model: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    scratch = _scratch_home(tmp_path, tiny_model)
    monkeypatch.chdir(REPOSITORY)
    monkeypatch.setenv("HOME", str(scratch))
    monkeypatch.setenv("LITPIPE_HOME", str(tmp_path / "litpipe-home"))
    plans = [plan(command) for command in documented_commands()]
    assert unplanned(plans) == []
    running = sorted(
        ((p, where) for p, where in once_each(plans) if p.runs),
        key=lambda found: STAGES.index(found[0].command.words[1]),
    )
    outcomes, failures = [], []
    for planned, where in running:
        argv = arguments(planned.command, scratch)
        started = time.perf_counter()
        with monkeypatch.context() as environment:
            for name, value in planned.command.environment.items():
                environment.setenv(name, value)
            code: int | str | None
            try:
                code = main(argv)
            except SystemExit as refused:  # the CLI's parser refused the arguments
                code = refused.code
        said = capsys.readouterr()
        expected = f" (expected: {planned.exit_reason})" if planned.exit_reason else ""
        outcomes.append(
            f"exit {code} in {time.perf_counter() - started:5.1f} s  {where}: "
            f"litpipe {shlex.join(argv)}{expected}"
        )
        if code != planned.exit_code:
            failures.append(
                f"{where}: {planned.command.text}\n  exit {code}, the docs say "
                f"{planned.exit_code}\n  stderr: {said.err[-1500:]}\n  stdout: {said.out[-800:]}"
            )
    with capsys.disabled():
        print("\n" + "\n".join(outcomes))
        print(describe(plans))
    assert not failures, "\n\n".join(failures)
