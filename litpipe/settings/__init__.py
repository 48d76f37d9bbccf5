"""litpipe's one settings model, shared by the CLI and the Dagster resources.

Values come, highest precedence first, from: arguments given in code (the CLI's flags),
`LITPIPE_*` environment variables, a `litpipe.toml` in the working directory (or the file named
by `LITPIPE_CONFIG`), the named preset (`preset`: litpipe/presets/<name>.toml), and the defaults
(each group's, in its module). The settings are grouped by what they configure
(`settings.llm.model`, set as `LITPIPE_LLM__MODEL` or `model` under `[llm]` in litpipe.toml); the
flat names they had before (`llm_model`, `LITPIPE_LLM_MODEL`) still work, with a
`DeprecationWarning` naming the new one.

One module per group of settings (`ingest`, `llm`, `retrieval`, `synthesis`, `grading`,
`related_work`, `query_summary`, `operations`, `zotero`), and: `model` (`Settings` and the
order of its sources), `paths` (`HomePaths`: the paths under a home), `routes` (what an agent's
calls resolve to), `sources` (the environment's flat names, litpipe.toml, the presets), `resolved` (the settings a command
resolved, in the file it hands the Dagster processes it starts), `flat_names` (the names from
before the grouping) and `base` (what every group shares). Import the names from here.
"""

from __future__ import annotations

from litpipe.settings.base import FlatSettingWarning, SettingsGroup
from litpipe.settings.flat_names import FLAT_NAMES, NESTED_NAMES
from litpipe.settings.grading import GradingSettings
from litpipe.settings.ingest import (
    DEFAULT_EMBEDDER,
    DEFAULT_EMBEDDER_BACKEND,
    EmbedderBackend,
    IngestSettings,
)
from litpipe.settings.llm import LLMSettings, RateLimit
from litpipe.settings.model import Settings
from litpipe.settings.operations import OperationsSettings
from litpipe.settings.paths import HomePaths
from litpipe.settings.query_summary import QuerySummarySettings
from litpipe.settings.related_work import RelatedWorkSettings
from litpipe.settings.resolved import (
    SETTINGS_FILE_VARIABLE,
    CredentialsNotGiven,
    code_location_settings,
    credentials_environment,
    credentials_in_environment,
    read_resolved_settings,
    served_settings_environment,
    with_credentials,
    write_resolved_settings,
)
from litpipe.settings.retrieval import RerankerName, RetrievalSettings
from litpipe.settings.routes import (
    DEFAULT_REPLY_TOKENS,
    OFFLINE,
    RENAMED_AGENTS,
    AgentRoute,
    Route,
    StructuredOutput,
)
from litpipe.settings.sources import (
    ENV_PREFIX,
    config_file,
    environment_name,
    preset_names,
    preset_values,
    presets_dir,
)
from litpipe.settings.synthesis import SynthesisMethod, SynthesisSettings
from litpipe.settings.zotero import ZoteroSettings

__all__ = [
    "DEFAULT_EMBEDDER",
    "DEFAULT_EMBEDDER_BACKEND",
    "DEFAULT_REPLY_TOKENS",
    "ENV_PREFIX",
    "FLAT_NAMES",
    "NESTED_NAMES",
    "OFFLINE",
    "RENAMED_AGENTS",
    "SETTINGS_FILE_VARIABLE",
    "AgentRoute",
    "CredentialsNotGiven",
    "EmbedderBackend",
    "FlatSettingWarning",
    "GradingSettings",
    "HomePaths",
    "IngestSettings",
    "LLMSettings",
    "OperationsSettings",
    "QuerySummarySettings",
    "RateLimit",
    "RelatedWorkSettings",
    "RerankerName",
    "RetrievalSettings",
    "Route",
    "Settings",
    "SettingsGroup",
    "StructuredOutput",
    "SynthesisMethod",
    "SynthesisSettings",
    "ZoteroSettings",
    "code_location_settings",
    "credentials_environment",
    "credentials_in_environment",
    "config_file",
    "environment_name",
    "preset_names",
    "preset_values",
    "presets_dir",
    "read_resolved_settings",
    "served_settings_environment",
    "with_credentials",
    "write_resolved_settings",
]
