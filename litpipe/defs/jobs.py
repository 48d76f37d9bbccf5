import dagster as dg

# A failed step was retried already by its own retry policy (transient model errors) or cannot
# succeed on a rerun (a corrupt PDF, a bad request): where the instance enables run retries,
# they are for runs whose worker died (a lost pod, an out-of-memory kill), not for these.
RUN_TAGS = {"dagster/retry_on_asset_or_op_failure": "false"}

# Every per-paper stage, source to answers: what the sensor and `litpipe run` request per paper.
paper_pipeline = dg.define_asset_job(
    "paper_pipeline",
    selection=dg.AssetSelection.groups(
        "ingest", "paper_questions", "question_evidence", "paper_answers"
    ),
    tags=RUN_TAGS,
)
# Every per-collection stage, index to syntheses: run once the collection's papers are built.
collection_pipeline = dg.define_asset_job(
    "collection_pipeline",
    selection=dg.AssetSelection.groups(
        "corpus_index",
        "citation_graph",
        "cross_paper_questions",
        "relationship_analysis",
        "comparison_table",
        "synthesis",
    ),
    tags=RUN_TAGS,
)
# One related-work request (a partition of `related_work_requests`): `litpipe related-work`.
related_work_job = dg.define_asset_job(
    "related_work_job", selection=dg.AssetSelection.groups("related_work"), tags=RUN_TAGS
)
# One query-focused summary request (a partition of `query_requests`): `litpipe ask`.
query_summary_job = dg.define_asset_job(
    "query_summary_job", selection=dg.AssetSelection.groups("query_summary"), tags=RUN_TAGS
)
# One question of a collection (a partition of `collection_questions`): `litpipe ask
# --collection`.
collection_answer_job = dg.define_asset_job(
    "collection_answer_job", selection=dg.AssetSelection.groups("collection_answer"), tags=RUN_TAGS
)
# One day's digest (a partition of `partitions.nightly`): what the nightly schedule runs. Kept
# out of the paper and collection pipelines, which `litpipe run` and the sensor request.
nightly_digest_job = dg.define_asset_job(
    "nightly_digest_job", selection=dg.AssetSelection.groups("nightly_digest"), tags=RUN_TAGS
)
# The vector store's maintenance (compaction, old versions, indexes): what its schedule runs.
vector_maintenance_job = dg.define_asset_job(
    "vector_maintenance_job",
    selection=dg.AssetSelection.groups("vector_maintenance"),
    tags=RUN_TAGS,
)
