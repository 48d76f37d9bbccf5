"""How `make test` spreads the suite over its workers (pytest-xdist, `--dist loadgroup`).

A module whose tests share a costly fixture (a llama-server and the three PDFs run through it, a
built corpus, a browser) marks them with one `xdist_group`, so that one worker sets it up once.
With pytest 9.2 and pytest-xdist 3.8 the mark was ignored without a word (pytest-xdist#1386):
the real-model module ran its five-minute fixture on both workers.
"""

from __future__ import annotations

import pytest

from litpipe_tests.llama_server import XDIST_GROUP, xdist_group

GROUP = "test_suite_workers"


@pytest.mark.xdist_group(GROUP)
def test_a_grouped_test_is_scheduled_by_its_group(request: pytest.FixtureRequest) -> None:
    # A worker's own `dist` is "no"; pytest-xdist keeps "--dist loadgroup" as `loadgroup`.
    if not request.config.getoption("loadgroup", default=False):
        pytest.skip("runs where `make test` runs it: on a pytest-xdist worker, --dist loadgroup")
    # The scheduler reads a test's group from the end of its node id, where the worker put it.
    assert request.node.nodeid.endswith(f"@{GROUP}"), (
        f"{request.node.nodeid}: pytest-xdist ignores xdist_group with pytest "
        f"{pytest.__version__}; each worker would set up a group's shared fixtures"
    )


def test_the_real_servers_tests_are_handed_out_first(request: pytest.FixtureRequest) -> None:
    """They take one worker for minutes: begun last, they would be the suite's tail."""
    first = [xdist_group(item) == XDIST_GROUP for item in request.session.items]
    assert first == sorted(first, reverse=True), "a test comes before the real server's"
    # pytest-xdist hands out the groups in that order only where it does not sort them by size.
    if request.config.getoption("loadgroup", default=False):
        assert request.config.getoption("loadscopereorder") is False, (
            "`make test` runs pytest-xdist without --no-loadscope-reorder"
        )


def test_the_slow_tests_of_no_group_come_before_the_quick_ones(
    request: pytest.FixtureRequest,
) -> None:
    """Each takes a worker for a minute or more: begun among the last, each would be a tail."""
    ungrouped = [item for item in request.session.items if xdist_group(item) is None]
    slow = [item.get_closest_marker("slow") is not None for item in ungrouped]
    assert slow == sorted(slow, reverse=True), "a quick test of no group comes before a slow one"
