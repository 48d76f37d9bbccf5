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

from litpipe.defs.definitions import build_definitions, served_groups
from litpipe.settings import OperationsSettings


def k8s_executor(operations: OperationsSettings) -> dg.ExecutorDefinition:
    """Each step of a launched run a Kubernetes Job, at most `operations.max_concurrent_steps`
    step pods of one run at once (the bound the multiprocess executor has elsewhere). The pods
    get the run's image, environment (ConfigMaps, Secrets) and volumes from the run launcher and
    the user deployment, which the Helm values set."""
    return k8s_job_executor.configured({"max_concurrent": operations.max_concurrent_steps})


# litpipe's definitions for the settings this code location serves (`served_groups`).
_served = served_groups()
defs = build_definitions(**_served, executor=k8s_executor(_served["operations"]))
