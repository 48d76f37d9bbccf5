"""Readers that turn PDFs and abstract tables into litpipe papers."""
