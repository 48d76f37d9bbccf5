"""The Dagster graph. The only package of litpipe that imports dagster."""

import warnings

import dagster as dg

# Content-hash data versions are how litpipe stops recomputation where outputs did not change
# (DESIGN.md, "Rules"); Dagster marks the parameter beta, and the warning would repeat per step.
warnings.filterwarnings("ignore", message=r"Parameter `data_version`", category=dg.BetaWarning)
