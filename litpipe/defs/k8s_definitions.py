"""The code location for Kubernetes: litpipe's graph with every step of a launched run in a pod
of its own (dagster-k8s' `k8s_job_executor`).

The Dagster Helm chart's user deployment serves it (`deploy/helm/values.yaml`:
`dagster code-server start -m litpipe.defs.k8s_definitions`) from the image of
`deploy/Dockerfile`. It needs the `k8s` extra (`pip install 'litpipe[k8s]'`, dagster-k8s).
Everything but the executor is `build_definitions`': the same assets, jobs, sensors, resources
and settings (the `LITPIPE_*` variables of the pod, or the file `LITPIPE_SETTINGS_FILE` names).
Docs: docs/how-to/kubernetes.md.
"""

from __future__ import annotations

import dagster as dg
from dagster_k8s import k8s_job_executor

from litpipe.defs.definitions import build_definitions
from litpipe.settings import Settings, code_location_settings


def build_k8s_definitions(settings: Settings) -> dg.Definitions:
    """litpipe's definitions for these settings, each step of a launched run a Kubernetes Job.

    At most `operations.max_concurrent_steps` step pods of one run at once (the bound the
    multiprocess executor has elsewhere). The pods get the run's image, environment (ConfigMaps,
    Secrets) and volumes from the run launcher and the user deployment, which the Helm values set.
    """
    executor = k8s_job_executor.configured(
        {"max_concurrent": settings.operations.max_concurrent_steps}
    )
    return build_definitions(settings, executor=executor)


defs = build_k8s_definitions(code_location_settings())
