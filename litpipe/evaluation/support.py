"""The support score moved to `litpipe.retrieval.support` (below the agents, which grade with it).

Only `Encoder` is still imported from here, by the asset modules under `litpipe/defs/assets/`
(being reworked elsewhere): import it from `litpipe.retrieval.support`, then delete this module.
"""

from litpipe.retrieval.support import Encoder

__all__ = ["Encoder"]
