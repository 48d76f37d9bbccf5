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
