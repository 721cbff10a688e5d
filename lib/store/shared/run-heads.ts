/**
 * What listRunHeads reads of a run and which runs, once for both dialects: the two schemas' `runs` tables have
 * the same columns, and Drizzle's operators build each dialect's SQL from them (as audit-filter.ts does).
 */
import { and, eq, inArray, type SQL } from 'drizzle-orm';
import type { RunStore } from '../contract';
import type { runs as pgRuns } from '../schema/pg';
import type { runs as sqliteRuns } from '../schema/sqlite';

type RunsTable = typeof sqliteRuns | typeof pgRuns;
type HeadFilter = Parameters<RunStore['listRunHeads']>[0];

/** The row's columns the stall judge reads (RunHead), none joined. */
export function runHeadColumns<T extends RunsTable>(
  table: T,
): Pick<T, 'id' | 'workflow' | 'status' | 'owner' | 'leaseExpiresAt'> {
  return {
    id: table.id,
    workflow: table.workflow,
    status: table.status,
    owner: table.owner,
    leaseExpiresAt: table.leaseExpiresAt,
  };
}

/** The runs of the status (of these workflows); callers answer an empty `workflows` with no read at all. */
export function runHeadFilter(table: RunsTable, filter: HeadFilter): SQL | undefined {
  return and(eq(table.status, filter.status), filter.workflows ? inArray(table.workflow, filter.workflows) : undefined);
}
