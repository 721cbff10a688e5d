/**
 * The one read of a run's own rows, shared by the run page (lib/data/run-detail.ts), GET /api/v1/runs/:id
 * (lib/api/runs.ts) and `waybill inspect` (lib/cli/runs.ts): its runs row, or an outside client's run made from
 * its rows (lib/store/shared/outside-runs.ts), its progress, and its first claims with their counts. Each caller adds
 * what it shows besides (charts, waits, events) and shapes the answer; none reads these rows again.
 */
import type { ClaimRow, ProgressRow, RunRow, RunTags, Store } from '../store/contract';
import { type OutsideStatus, outsideRun } from '../store/shared/outside-runs';
import { readClaimsPage } from './claims-list';

/**
 * Claims a run's read lists, oldest first (the likeliest to be orphaned); the rest are counted, and paged on
 * through the claims list. An outside client may hold any number of claims on one run: 20,000 of them made a
 * 20 MB page and a 4.3 MB answer.
 */
export const RUN_CLAIMS_SHOWN = 100;

export type RunRowsStore = Pick<
  Store,
  'getRun' | 'loadProgress' | 'listClaims' | 'countClaims' | 'countCommitted' | 'lastCommittedAt' | 'getRunTags'
>;

export interface RunRows {
  /** The runs row, or null for an outside client's run. */
  row: RunRow | null;
  /** An outside client's run made from its rows, when there is no runs row. */
  outside: (Omit<RunRow, 'status'> & { status: OutsideStatus }) | null;
  progress: ProgressRow | null;
  /** The first RUN_CLAIMS_SHOWN claims, oldest first. */
  claims: ClaimRow[];
  /** Whether there are claims past those: the last one shown is where the next page starts. */
  moreClaims: boolean;
  claimCount: { total: number; orphaned: number };
  /** Its tags and metadata (none for an outside client's run). */
  tags: RunTags;
}

/** The run's rows, or null when nothing is stored under its id (no run row, progress, claim or committed row). */
export async function readRunRows(store: RunRowsStore, id: string, claimTtlMs: number): Promise<RunRows | null> {
  const [row, progress, { claims, next }, claimCount, tags] = await Promise.all([
    store.getRun(id),
    store.loadProgress(id),
    readClaimsPage(store, { runId: id, limit: RUN_CLAIMS_SHOWN }, claimTtlMs),
    store.countClaims({ runId: id, claimTtlMs }),
    store.getRunTags(id),
  ]);
  const moreClaims = next !== null;
  if (row) return { row, outside: null, progress, claims, moreClaims, claimCount, tags };
  // The committed rows are counted only for a run with neither progress nor a claim, the one case where they
  // decide; a commit writes progress (the article's client too), so without progress the last commit dates the run.
  const committed = progress || claims.length > 0 ? 0 : await store.countCommitted(id);
  const lastCommittedAt = progress ? null : await store.lastCommittedAt(id);
  const outside = outsideRun(id, { progress, claims, committed, lastCommittedAt });
  return outside ? { row: null, outside, progress, claims, moreClaims, claimCount, tags } : null;
}
