import dagster as dg

# Everything per paper, source to vectors: what the sensor requests for each new paper.
ingest_job = dg.define_asset_job("ingest_papers", selection=dg.AssetSelection.groups("ingest"))
