/**
 * An outside client's run: rows in progress, committed or claims under a run id with no runs row (the
 * article's Python class, a library loop that declares nothing, a client of the HTTP protocol). One definition
 * for the store's list (both backends' SQL embed OUTSIDE_STATUS_SQL) and for every single-run view (the API,
 * the CLI, the run page call outsideRun):
 *
 * - it exists while any of those rows does: a run whose claims were expired, resolved or swept, or that never
 *   wrote progress, is still listed and shown by its committed rows. Events alone (an expiry's record) are
 *   history about keys, not a run;
 * - its workflow is `external`, and its status `running` while it holds a claim (live or orphaned), else
 *   `idle`: it has no status of its own, and nothing says whether it is done, so never `completed`;
 * - its time is the latest of its progress write, its claims and its commits.
 */

import type { RunRow } from '../contract';
import { RUN_STATUSES } from './sql';

export const OUTSIDE_WORKFLOW = 'external';

/** A runs row's statuses (the schemas' enum), defined once in sql.ts. */
export { RUN_STATUSES };

/**
 * What a listing may show and filter by: a runs row's status, or `idle` for an outside client's run holding
 * no claim. One list for the store's filter, the API's `?status=`, the CLI's `--status` and the runs page.
 */
export const LISTED_STATUSES = [...RUN_STATUSES, 'idle'] as const;
export type ListedStatus = (typeof LISTED_STATUSES)[number];

/** The status of the outside run whose id is the SQL expression `runId`; valid on SQLite and PostgreSQL alike. */
export const OUTSIDE_STATUS_SQL = (runId: string) =>
  `CASE WHEN EXISTS (SELECT 1 FROM claims c WHERE c.run_id = ${runId}) THEN 'running' ELSE 'idle' END`;

export type OutsideStatus = 'running' | 'idle';

/** What a single-run view has read about a run with no runs row. */
export interface OutsideRows {
  progress: { updatedAt: number } | null;
  claims: { claimedAt: number; workerId: string | null }[];
  /** How many committed rows, and the latest commit time when known. */
  committed: number;
  lastCommittedAt?: number | null;
}

/** A runs row for an outside client's run, or null when it has no row at all (then there is no such run). */
export function outsideRun(id: string, rows: OutsideRows): (Omit<RunRow, 'status'> & { status: OutsideStatus }) | null {
  if (!rows.progress && rows.claims.length === 0 && rows.committed === 0) return null;
  const touched = Math.max(
    rows.progress?.updatedAt ?? 0,
    rows.lastCommittedAt ?? 0,
    ...rows.claims.map((c) => c.claimedAt),
  );
  return {
    id,
    workflow: OUTSIDE_WORKFLOW,
    inputJson: 'null',
    status: rows.claims.length > 0 ? 'running' : 'idle',
    totalSteps: null,
    owner: rows.claims[0]?.workerId ?? null,
    leaseExpiresAt: null,
    attempts: 0,
    error: null,
    outputJson: null,
    createdAt: touched,
    updatedAt: touched,
    startedAt: null,
    finishedAt: null,
    forkedFromRun: null,
    forkedAtStep: null,
    budgetUsd: null,
    parentRunId: null,
    detached: false,
    priority: 0,
    traceparent: null,
    cancelledWith: null,
  };
}

/**
 * Whether a runs list's filter can match an outside client's run: one running or idle, in no workflow of ours,
 * with no owner, parent, wait, tag or metadata. Both backends' lists skip the outside runs' reads when not.
 */
export function outsideMayMatch(filter: {
  status?: string;
  waiting?: string;
  workflow?: string;
  owner?: string;
  parent?: string;
  tags?: readonly string[];
  meta?: readonly unknown[];
}): boolean {
  return (
    (filter.status === undefined || filter.status === 'running' || filter.status === 'idle') &&
    !filter.waiting &&
    (filter.workflow === undefined || filter.workflow === OUTSIDE_WORKFLOW) &&
    !filter.owner &&
    !filter.parent &&
    !filter.tags?.length &&
    !filter.meta?.length
  );
}
