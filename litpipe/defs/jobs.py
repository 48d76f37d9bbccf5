import dagster as dg

# Every per-paper stage, source to questions: what the sensor and `litpipe run` request per paper.
paper_pipeline = dg.define_asset_job(
    "paper_pipeline", selection=dg.AssetSelection.groups("ingest", "questions")
)
