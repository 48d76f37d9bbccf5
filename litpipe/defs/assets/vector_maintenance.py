"""The vector store's nightly maintenance (litpipe/workflows/vector_maintenance.py does it)."""

import dagster as dg

from litpipe.defs.steps import Resources, step_asset
from litpipe.defs.versions import CodeVersion
from litpipe.retrieval import store
from litpipe.workflows import vector_maintenance as maintenance_workflow


def build_vector_maintenance_assets() -> list[dg.AssetsDefinition]:
    @step_asset(
        CodeVersion(modules=(maintenance_workflow, store)),
        {},
        resources=("lancedb",),
        group_name="vector_maintenance",
        kinds={"lancedb"},
        description="Every chunk table of the LanceDB store compacted, its versions older than a "
        "day deleted, its duplicate chunk_ids (if a writer left any) removed and its indexes "
        "brought up to date; on object storage, the only step that builds the vector index. "
        "Run every night by vector_maintenance_schedule.",
    )
    def vector_maintenance(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        chunk_store = Resources(context).lancedb.store()
        done = maintenance_workflow.vector_maintenance(chunk_store)
        for table in done:
            context.log.info(
                f"{table.table}: {table.rows} rows; fragments {table.fragments_before} -> "
                f"{table.fragments_after}, versions {table.versions_before} -> "
                f"{table.versions_after}, {table.duplicates_removed} duplicates removed"
                + (", vector index built" if table.vector_index_built else "")
            )
        return dg.MaterializeResult(
            metadata={
                "tables": len(done),
                "rows": sum(table.rows for table in done),
                "fragments": sum(table.fragments_after for table in done),
                "versions": sum(table.versions_after for table in done),
                "duplicates_removed": sum(table.duplicates_removed for table in done),
                "vector_indexes_built": sum(table.vector_index_built for table in done),
            }
        )

    return [vector_maintenance]
