"""litpipe's one settings model, shared by the CLI and the Dagster resources.

Values come, highest precedence first, from: arguments given in code (the CLI's flags),
`LITPIPE_*` environment variables, a `litpipe.toml` in the working directory (or the file named
by `LITPIPE_CONFIG`), the named preset (`preset`: litpipe/presets/<name>.toml), and the defaults
(each group's, in its module). The settings are grouped by what they configure
(`settings.llm.model`, set as `LITPIPE_LLM__MODEL` or `model` under `[llm]` in litpipe.toml); a
key of litpipe.toml that names no setting is refused, naming the nearest settings.

One module per group of settings (`ingest`, `llm`, `retrieval`, `synthesis`, `grading`,
`related_work`, `comparison`, `query_summary`, `operations`, `zotero`), and: `model`
(`Settings` and the order of its sources), `paths` (`HomePaths`: the paths under a home),
`routes` (what an agent's calls resolve to), `sources` (litpipe.toml, the home's recorded
settings, the presets), `resolved` (the settings a command resolved, in the file it hands the
Dagster processes it starts) and `base` (what every group shares). Import the names from here.
"""

from __future__ import annotations

from litpipe.settings.base import SettingsGroup
from litpipe.settings.comparison import ComparisonSettings
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
    AgentRoute,
    Route,
    StructuredOutput,
)
from litpipe.settings.sources import (
    ENV_PREFIX,
    UnknownSettingError,
    config_file,
    environment_name,
    preset_names,
    preset_values,
    presets_dir,
    setting_fields,
    unknown_setting,
)
from litpipe.settings.synthesis import SynthesisMethod, SynthesisSettings
from litpipe.settings.zotero import ZoteroSettings

__all__ = [
    "DEFAULT_EMBEDDER",
    "DEFAULT_EMBEDDER_BACKEND",
    "DEFAULT_REPLY_TOKENS",
    "ENV_PREFIX",
    "OFFLINE",
    "SETTINGS_FILE_VARIABLE",
    "AgentRoute",
    "ComparisonSettings",
    "CredentialsNotGiven",
    "EmbedderBackend",
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
    "UnknownSettingError",
    "ZoteroSettings",
    "code_location_settings",
    "config_file",
    "credentials_environment",
    "credentials_in_environment",
    "environment_name",
    "preset_names",
    "preset_values",
    "presets_dir",
    "read_resolved_settings",
    "served_settings_environment",
    "setting_fields",
    "unknown_setting",
    "with_credentials",
    "write_resolved_settings",
]
