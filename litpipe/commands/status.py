"""`litpipe status`: the models each stage calls, and per collection and per request what is
materialized, stale or missing."""

from __future__ import annotations

from collections import Counter

from litpipe import text
from litpipe.settings import Settings
from litpipe.settings.groups import settings_groups


def status_command(settings: Settings, show_all: bool) -> int:
    from litpipe.catalog import Catalog
    from litpipe.commands.standing import status_lines, sync_config
    from litpipe.defs.definitions import build_definitions
    from litpipe.defs.staleness import State, fallback_counts, partition_states
    from litpipe.llm.window import routes_described
    from litpipe.runtime.requests import every_request_state
    from litpipe.runtime.runner import collection_asset_keys, open_instance, paper_asset_keys

    for line in routes_described(settings.llm):
        print(line)
    sync_config(settings.home, settings.questions)
    catalog = Catalog(settings.paths.catalog_path)
    instance = open_instance(settings.llm, settings.paths)
    defs = build_definitions(**settings_groups(settings))
    keys = paper_asset_keys(defs)
    collections = catalog.collections()
    requests = every_request_state(instance, defs)
    if not collections and not requests:
        print(f"nothing registered yet under {settings.home}: try `litpipe run SOURCE`")
        return 0
    for collection in collections:
        paper_ids = catalog.papers(collection)
        print(f"{collection}: {text.counted(len(paper_ids), 'paper')}")
        for line in status_lines(settings.paths, collection):
            print(line)
        collection_keys = collection_asset_keys(defs)
        for key, by_collection in partition_states(
            instance, defs, collection_keys, [collection]
        ).items():
            print(f"  {key.to_user_string():<18} {by_collection[collection]}")
        fell_back = {
            key.to_user_string(): sum(fallback_counts(instance, key, partitions).values())
            for key, partitions in [
                *((key, [collection]) for key in collection_keys),
                *((key, paper_ids) for key in keys),
            ]
        }
        if any(fell_back.values()):
            counted = ", ".join(f"{n} in {stage}" for stage, n in fell_back.items() if n)
            print(
                f"  written offline in the model's place: {counted}; the next `litpipe run` of "
                "this collection with its model working asks them again (and only them)"
            )
        states = partition_states(instance, defs, keys, paper_ids)
        for key in keys:
            by_state: dict[State, list[str]] = {}
            for paper_id, state in states[key].items():
                by_state.setdefault(state, []).append(paper_id)
            counts = ", ".join(f"{len(ids)} {state}" for state, ids in sorted(by_state.items()))
            print(f"  {key.to_user_string():<18} {counts}")
            for state, ids in sorted(by_state.items()):
                if state is State.FRESH:
                    continue
                shown = ids if show_all else ids[:5]
                more = "" if len(shown) == len(ids) else f" (+{len(ids) - len(shown)} more)"
                print(f"      {state}: {' '.join(shown)}{more}")
    for asset, states_of_requests in requests.items():
        request_counts = Counter(str(state) for state in states_of_requests.values())
        listed = ", ".join(f"{n} {state}" for state, n in sorted(request_counts.items()))
        print(f"{asset}: {text.counted(len(states_of_requests), 'request')} ({listed})")
    return 0
