import dagster as dg

# Keys are litpipe paper ids (DOI-, arXiv- or content-hash-derived; URL-safe, no commas or `|`).
papers = dg.DynamicPartitionsDefinition(name="papers")
# A folder of PDFs under a corpus root, or one abstract table.
collections = dg.DynamicPartitionsDefinition(name="collections")
