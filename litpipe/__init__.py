"""litpipe: cited, comparative syntheses of scientific papers, as a Dagster asset pipeline."""

import os

# litpipe runs offline unless a user says otherwise: no model hub look-ups (the default embedder
# ships in a package) and no price-list download when litellm is imported.
for _name, _value in {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
}.items():
    os.environ.setdefault(_name, _value)
