"""What the reply schemas' fields share."""

from __future__ import annotations

# A reply field the code needs words in: the schema says so, so that a server with structured
# output never sends a blank one.
NON_BLANK = r"\S"
