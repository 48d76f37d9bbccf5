import dagster as dg

# Keys are litpipe paper ids (DOI-, arXiv- or content-hash-derived; URL-safe, no commas or `|`).
papers = dg.DynamicPartitionsDefinition(name="papers")
# A folder of PDFs under a corpus root, or one abstract table.
collections = dg.DynamicPartitionsDefinition(name="collections")
# One user request each (a paper and a query; an abstracts table and a research idea): the key
# is a hash of the request, its inputs are stored under `Settings.requests_dir`.
query_requests = dg.DynamicPartitionsDefinition(name="query_requests")
related_work_requests = dg.DynamicPartitionsDefinition(name="related_work_requests")
# One nightly digest per UTC day, from litpipe's first year on. With no end offset the last
# partition is yesterday: a day is digested once it is over.
nightly = dg.DailyPartitionsDefinition(start_date="2026-01-01")
