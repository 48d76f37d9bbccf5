"""Evaluation of litpipe's outputs: retrieval quality (nDCG, recall) on BEIR-format datasets."""
