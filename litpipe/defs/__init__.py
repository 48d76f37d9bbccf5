"""The Dagster graph. The only package of litpipe that imports dagster."""
