"""The nightly schedules: at 02:00 UTC the digest of the day that just ended; at 03:00 UTC the
vector store's maintenance."""

import dagster as dg

from litpipe.defs.jobs import nightly_digest_job, vector_maintenance_job

# Built from the job's daily partitions, each tick requests the last complete day (run key: the
# day, so a tick evaluated twice runs once). 02:00 rather than midnight leaves the papers that
# arrived late in the day time to be ingested and answered; one still running is listed in the
# digest as not yet analysed.
nightly_digest_schedule = dg.build_schedule_from_partitioned_job(
    nightly_digest_job,
    name="nightly_digest_schedule",
    hour_of_day=2,
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Builds yesterday's nightly digest (UTC days) at 02:00 UTC.",
)
# After the digest, when the night's papers are in: one run a night compacts what their commits
# left (a fragment and a version each) and brings the indexes up to date.
vector_maintenance_schedule = dg.ScheduleDefinition(
    name="vector_maintenance_schedule",
    job=vector_maintenance_job,
    cron_schedule="0 3 * * *",
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Maintains the LanceDB chunk tables at 03:00 UTC: compaction, versions older "
    "than a day deleted, indexes updated (the vector index built there on object storage).",
)
