import dagster as dg

# The dynamic partitions' names, for the instance's calls and the build locks (Dagster types a
# definition's `name` as optional).
PAPERS = "papers"
COLLECTIONS = "collections"
QUERY_REQUESTS = "query_requests"
RELATED_WORK_REQUESTS = "related_work_requests"
COLLECTION_QUESTIONS = "collection_questions"

# Keys are litpipe paper ids (DOI-, arXiv- or content-hash-derived; URL-safe, no commas or `|`).
papers = dg.DynamicPartitionsDefinition(name=PAPERS)
# A folder of PDFs under a corpus root, or one abstract table.
collections = dg.DynamicPartitionsDefinition(name=COLLECTIONS)
# One user request each (a paper and a query; an abstracts table and a research idea): the key
# is a hash of the request, its inputs are stored under `HomePaths.requests_dir`.
query_requests = dg.DynamicPartitionsDefinition(name=QUERY_REQUESTS)
related_work_requests = dg.DynamicPartitionsDefinition(name=RELATED_WORK_REQUESTS)
# One question asked of one collection (`litpipe ask --collection`): the key is a hash of the
# collection and the question, the request stored under `HomePaths.requests_dir`.
collection_questions = dg.DynamicPartitionsDefinition(name=COLLECTION_QUESTIONS)
# One nightly digest per UTC day, from litpipe's first year on. With no end offset the last
# partition is yesterday: a day is digested once it is over.
nightly = dg.DailyPartitionsDefinition(start_date="2026-01-01")
