"""Which llama-server the real-model tests build and reuse (litpipe_tests/llama_server.py).

Built with -march=native on CI's Sapphire Rapids CPU, the binary ran ggml's AMX kernels before
asking Linux for the AMX tile state: it died with SIGILL at its first token, and every
real-model test failed.
It is built for a named level instead, and cached outside the clone under that level's name.
These tests need no compiler and no server.
"""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from litpipe_tests import llama_server
from litpipe_tests.llama_server import LlamaServer, cpu_target

HASWELL = frozenset({"sse4_2", "avx", "avx2", "bmi2", "fma", "f16c", "popcnt"})
SAPPHIRE_RAPIDS = HASWELL | {"avx512f", "avx512bw", "avx512_fp16", "amx_tile"}
NEHALEM = frozenset({"sse4_1", "sse4_2", "popcnt"})


def test_a_cpu_with_avx512_and_one_without_share_one_build() -> None:
    assert cpu_target("x86_64", SAPPHIRE_RAPIDS) == cpu_target("x86_64", HASWELL)
    assert cpu_target("x86_64", HASWELL)[0] == "x86-64-v3"


def test_no_build_asks_the_compiler_for_the_cpu_it_runs_on() -> None:
    for flags in (SAPPHIRE_RAPIDS, HASWELL, NEHALEM, frozenset()):
        _, options = cpu_target("x86_64", flags)

        assert "-DGGML_NATIVE=OFF" in options
        # ggml leaves AVX-512 and AMX off unless asked, and they are not asked for.
        assert not any("AVX512" in option or "AMX" in option for option in options)
    assert cpu_target("aarch64", frozenset({"asimd", "sve"})) == ("aarch64", ("-DGGML_NATIVE=OFF",))


def test_a_cpu_without_avx2_gets_its_own_build_without_it() -> None:
    level, options = cpu_target("x86_64", NEHALEM)

    assert level == "x86-64-v2" != cpu_target("x86_64", HASWELL)[0]
    assert "-DGGML_SSE42=ON" in options
    assert {"-DGGML_AVX=OFF", "-DGGML_AVX2=OFF", "-DGGML_FMA=OFF", "-DGGML_F16C=OFF"} <= set(
        options
    )
    assert cpu_target("x86_64", frozenset())[0] == "x86-64"


def test_the_cached_binary_is_named_by_the_level_it_was_built_for(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("LITPIPE_LLAMA_SERVER_CACHE", str(tmp_path))
    monkeypatch.setattr(llama_server, "cpu_flags", lambda: NEHALEM)
    monkeypatch.setattr(llama_server.platform, "machine", lambda: "x86_64")

    assert llama_server.binary_path().parent.name.endswith("-x86-64-v2")


def test_a_binary_this_cpu_cannot_run_fails_saying_so_and_how_to_rebuild(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("LITPIPE_LLAMA_SERVER_CACHE", str(tmp_path))
    binary = llama_server.binary_path()
    binary.parent.mkdir(parents=True)
    # What a binary with instructions this CPU lacks does: dies of SIGILL once it computes.
    binary.write_text("#!/bin/sh\necho 'load_model: loading model'\nkill -ILL $$\n")
    binary.chmod(binary.stat().st_mode | stat.S_IXUSR)
    weights = tmp_path / "weights.gguf"
    weights.write_bytes(b"GGUF")
    monkeypatch.setattr(llama_server, "weights_path", lambda: weights)
    monkeypatch.setattr(llama_server, "served_weights", lambda: weights)

    with pytest.raises(RuntimeError) as failure, LlamaServer(start_timeout_s=10):
        pass

    message = str(failure.value)
    assert "illegal instruction" in message
    assert str(binary) in message and "delete it" in message
    assert "load_model" in message  # the server's own log follows
