"""A stop signal the kernel hands to a thread other than the main one (it may pick any thread of
the process) still stops the main thread's waits at once: for a model's replies (MASS-RAG's
three views among them), and for a lock another process holds. Python runs the handler on the
main thread only when that thread wakes; a wait that never woke held the stop until the reply
came (CI saw `litpipe backfill` ignore SIGTERM for the stub's 300 s)."""

from __future__ import annotations

import asyncio
import fcntl
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from pydantic import BaseModel

from litpipe.agents.answers import answer_questions
from litpipe.agents.asker import Asker
from litpipe.agents.massrag import VIEW_AGENTS
from litpipe.files import exclusive_lock
from litpipe.llm.client import LLMClient, model_call_loop
from litpipe.llm.usage import UsageLedger
from litpipe.schemas import QuestionEvidence
from litpipe_tests.stub_llm import StubLLM, stub_settings
from litpipe_tests.test_answers import EVIDENCE, SENSITIVITY


class StopAsked(Exception):
    """What the test's SIGTERM handler raises on the main thread."""


class Note(BaseModel):
    text: str


@contextmanager
def sigterm_raises_stop_asked() -> Iterator[None]:
    def stop(number: int, frame: object) -> None:
        raise StopAsked

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def sigterm_on_another_thread(when: threading.Event) -> threading.Thread:
    """A thread that, once `when` is set and the main thread had time to start waiting, sends
    SIGTERM to itself: the signal is taken on that thread, as the kernel may do with one sent
    to the process."""

    def send() -> None:
        when.wait(30)
        time.sleep(0.5)
        signal.pthread_kill(threading.get_ident(), signal.SIGTERM)

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    return thread


def ask_for_a_note(client: LLMClient) -> None:
    client.complete_sync(client.llm.route("note"), [{"role": "user", "content": "hi"}], Note)


def ask_for_the_three_views(client: LLMClient) -> None:
    """A question answered by MASS-RAG: its summarizer, extractor and reasoner asked at once."""
    item = QuestionEvidence(question=SENSITIVITY, chunks=EVIDENCE, reranked=True)
    answer_questions([item], "multi_view", Asker(client.llm, client))


@pytest.mark.parametrize(
    ("asking", "calls"), [(ask_for_a_note, 1), (ask_for_the_three_views, len(VIEW_AGENTS))]
)
def test_a_stop_taken_on_another_thread_ends_the_wait_for_replies_and_cancels_the_calls(
    tmp_path: Path, asking: Callable[[LLMClient], None], calls: int
) -> None:
    asked = threading.Event()
    received: list[object] = []

    def on_request(body: object) -> None:
        received.append(body)
        if len(received) == calls:
            asked.set()

    with StubLLM(latency_s=120, lifetime_s=180) as stub, sigterm_raises_stop_asked():
        stub.report_slots(8)  # the views' calls all in flight when the stop comes
        stub.respond("stub", on_request)
        settings = stub_settings(tmp_path, stub)
        client = LLMClient(settings.llm, settings.paths, UsageLedger(tmp_path / "usage.jsonl"))
        loop = model_call_loop()
        tasks_before = asyncio.run_coroutine_threadsafe(_tasks_left(), loop).result()
        sigterm_on_another_thread(asked)
        started = time.monotonic()
        with pytest.raises(StopAsked):
            asking(client)
        waited = time.monotonic() - started
        # The call was abandoned, not left running on the model-call loop.
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            tasks_after = asyncio.run_coroutine_threadsafe(_tasks_left(), loop).result()
            if tasks_after <= tasks_before:
                break
            time.sleep(0.05)
    assert asked.is_set() and waited < 10, f"the stop waited {waited:.1f} s for the replies"
    assert tasks_after <= tasks_before


async def _tasks_left() -> int:
    """Tasks on the model-call loop other than this one."""
    return len(asyncio.all_tasks()) - 1


def test_a_stop_taken_on_another_thread_ends_the_wait_for_a_lock(tmp_path: Path) -> None:
    lock_file = tmp_path / "build.lock"
    lock_file.touch()
    waiting = threading.Event()
    with lock_file.open("a") as holder, sigterm_raises_stop_asked():
        fcntl.flock(holder, fcntl.LOCK_EX)  # another open file: as another process holds it
        # The holder lets go after a while, so that a wait the stop cannot end fails the test
        # rather than hanging it.
        letting_go = threading.Timer(15, fcntl.flock, (holder, fcntl.LOCK_UN))
        letting_go.start()
        sigterm_on_another_thread(waiting)
        started = time.monotonic()
        try:
            with pytest.raises(StopAsked):
                waiting.set()
                with exclusive_lock(lock_file):
                    pytest.fail("the lock was held by another")
        finally:
            letting_go.cancel()
        waited = time.monotonic() - started
    assert waited < 5, f"the stop waited {waited:.1f} s for the lock"
