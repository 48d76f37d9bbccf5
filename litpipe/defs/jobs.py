import dagster as dg

# Every per-paper stage, source to answers: what the sensor and `litpipe run` request per paper.
paper_pipeline = dg.define_asset_job(
    "paper_pipeline",
    selection=dg.AssetSelection.groups("ingest", "questions", "evidence", "answers"),
)
# Every per-collection stage, index to syntheses: run once the collection's papers are built.
collection_pipeline = dg.define_asset_job(
    "collection_pipeline", selection=dg.AssetSelection.groups("corpus", "synthesis")
)
# One related-work request (a partition of `related_work_requests`): `litpipe related-work`.
related_work_job = dg.define_asset_job(
    "related_work_job", selection=dg.AssetSelection.groups("related_work")
)
# One query-focused summary request (a partition of `query_requests`): `litpipe ask`.
query_summary_job = dg.define_asset_job(
    "query_summary_job", selection=dg.AssetSelection.groups("query")
)
