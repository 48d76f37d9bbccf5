"""The nightly schedule: at 02:00 UTC it builds the digest of the day that just ended."""

import dagster as dg

from litpipe.defs.jobs import nightly_digest_job

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
