/**
 * The runs half of the API's reads over the store — list (filters, keyset cursor), inspect, committed — and the
 * bodies of its writes, whose operations (start, pause, resume, cancel, retry) are lib/control/runs's.
 * Framework-free: route handlers authorize, read the request, and call these or lib/control.
 */

import { z } from 'zod';
import { readRunFigures } from '../control/figures';
import { queuedReasonOf } from '../control/queued';
import { stepRef, stepText } from '../control/rewind';
import { RUN_CLAIMS_SHOWN, readRunRows } from '../control/run-rows';
import { RUN_ACTIONS } from '../control/runs';
import { readRunsPage } from '../control/runs-list';
import { readStallFacts, type StallSettings, stallOf } from '../control/stalled';
import { claimView, committedView, progressView, runSummaryView, runView } from '../control/views';
import { budgetUsdSchema } from '../domain/budget';
import { runIdLookup } from '../domain/run-id';
import { prioritySchema } from '../domain/run-limits';
import { metadataSchema, tagsSchema } from '../domain/run-tags';
import { traceparentSchema } from '../domain/traceparent';
import { NotFoundError } from '../errors';
import type { InsightStore, RunAction, RunStore, Store } from '../store/contract';
import { LISTED_STATUSES } from '../store/shared/outside-runs';
import { TRANSITIONS } from '../store/shared/transitions';
import {
  decodeCommittedCursor,
  decodeRunsCursor,
  encodeClaimsCursor,
  encodeCommittedCursor,
  encodeRunsCursor,
} from './cursor';
import { freeText, newRunId, stepNumber, typeError } from './ids';
import { requestTraceparent } from './trace';
import { queryLimit } from './validate';

/** The defaults of WAYBILL_RUN_LEASE_MS and WAYBILL_HEARTBEAT_MS, now: for a caller without a configuration. */
const defaultStall = (): StallSettings => ({ now: Date.now(), runLeaseMs: 30_000, heartbeatMs: 1000 });

import { metaFilter, tagFilter, WAITING_WITH_STATUS, waitingFilter, waitingMatchesStatus } from '../control/fields';
import { waitView } from '../control/waits';

export type RunsStore = Store & RunStore & InsightStore;

export const RUN_STATUSES = LISTED_STATUSES;
export { RUN_ACTIONS };

export const listRunsQuery = z
  .strictObject({
    status: z.enum(RUN_STATUSES, { error: `must be one of ${RUN_STATUSES.join(', ')}` }).optional(),
    /** Runs parked on an open wait of this kind: `?waiting=approval` is the runs that wait for a person. */
    waiting: waitingFilter.optional(),
    workflow: z
      .string()
      .regex(/^[a-z][a-z0-9-]{0,63}$/, 'must be a workflow name (lowercase letters, digits, dashes)')
      .optional(),
    q: freeText(200)
      .refine((s) => !/\p{Cc}/u.test(s), 'must not contain control characters')
      .optional(),
    /** Only this run's children (ctx.startChild). */
    parent: runIdLookup.optional(),
    /** Only runs with every one of these tags, and every one of these metadata `key=value` pairs. */
    tag: tagFilter.optional(),
    meta: metaFilter.optional(),
    limit: queryLimit(500).optional(),
    cursor: z.string().optional(),
  })
  .refine(waitingMatchesStatus, { path: ['waiting'], message: WAITING_WITH_STATUS });

/** The list's parameters that may be given more than once: `?tag=a&tag=b` asks for runs with both. */
export const LIST_RUNS_REPEATABLE = ['tag', 'meta'] as const;

export const startBody = z.strictObject({
  workflow: z
    .string({ error: typeError('a workflow name') })
    .min(1, 'must not be empty')
    .max(64, 'must be at most 64 characters'),
  input: z.unknown().optional(),
  id: newRunId.optional(),
  budgetUsd: budgetUsdSchema.optional(),
  priority: prioritySchema.optional(),
  /** The run's tags and metadata (lib/domain/run-tags.ts). */
  tags: tagsSchema.optional(),
  metadata: metadataSchema.optional(),
  /** The W3C trace context the run's spans continue; over a `traceparent` header. */
  traceparent: traceparentSchema.optional(),
});

/**
 * The trace context a start continues: the body's field, else a well-formed `traceparent` header (a malformed
 * header is ignored, as the W3C spec asks of a receiver: a proxy's bad header must not refuse the start).
 */
export function startTraceparent(request: Request, given: { traceparent?: string }): string | undefined {
  return given.traceparent ?? requestTraceparent(request);
}

export const committedQuery = z.strictObject({ limit: queryLimit(1000).optional(), cursor: z.string().optional() });

export async function listRuns(
  store: RunsStore,
  query: z.output<typeof listRunsQuery>,
  claimTtlMs: number,
  stall = defaultStall(),
) {
  const { runs, next } = await readRunsPage(
    store,
    {
      status: query.status,
      waiting: query.waiting,
      workflow: query.workflow,
      search: query.q || undefined,
      parent: query.parent,
      tags: query.tag,
      meta: query.meta,
      limit: query.limit ?? 50,
      claimTtlMs,
      after: query.cursor === undefined ? undefined : decodeRunsCursor(query.cursor),
    },
    readStallFacts(store, stall),
  );
  return {
    runs: runs.map((row) => runSummaryView(row, row.stall, row.queuedReason)),
    nextCursor: next ? encodeRunsCursor(next) : null,
  };
}

export { RUN_CLAIMS_SHOWN };

/**
 * A run as the run page sees it: its rows (lib/control/run-rows.ts), progress, counts, and its first claims;
 * `claimsNextCursor` pages on through GET /api/v1/claims?runId=.
 */
export async function getRun(store: RunsStore, id: string, claimTtlMs: number, stall = defaultStall()) {
  const [rows, committed, facts] = await Promise.all([
    readRunRows(store, id, claimTtlMs),
    store.countCommitted(id),
    readStallFacts(store, stall),
  ]);
  if (!rows) throw new NotFoundError(`run ${id}`);
  const { row, outside, progress, claims, claimCount } = rows;
  const waits = row ? await store.listWaits(id) : [];
  const lastShown = claims.at(-1);
  const run = row
    ? runView(row, false, stallOf(row, facts), await queuedReasonOf(store, row, facts))
    : runView(outside!, true);
  return {
    run: { ...run, ...rows.tags },
    progress: progress ? progressView(progress) : null,
    figures: await readRunFigures(store, run, progress, committed),
    counts: { committed, claims: claimCount.total, orphanedClaims: claimCount.orphaned },
    claims: claims.map((c) => claimView(c, claimTtlMs)),
    claimsNextCursor: rows.moreClaims && lastShown ? encodeClaimsCursor(lastShown) : null,
    actions: row ? RUN_ACTIONS.filter((a) => TRANSITIONS[a].from.includes(row.status)) : [],
    waits: waits.map(waitView),
  };
}

export async function listCommitted(
  store: RunsStore,
  id: string,
  query: z.output<typeof committedQuery>,
  claimTtlMs: number,
) {
  await getRun(store, id, claimTtlMs); // 404 for a run that does not exist, rather than an empty page
  const limit = query.limit ?? 100;
  const rows = await store.listCommitted(id, {
    limit: limit + 1,
    afterKey: query.cursor === undefined ? undefined : decodeCommittedCursor(query.cursor),
  });
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    committed: page.map(committedView),
    nextCursor: rows.length > limit && last ? encodeCommittedCursor(last.idemKey) : null,
  };
}

/** An operator action's body: none, or `{ "reason"?: "…" }`, kept in the audit line (lib/control checks its text). */
export const actionBody = z.strictObject({ reason: z.string({ error: 'must be text' }).optional() }).optional();

export const rerunBody = z.strictObject({
  /** A step number, or a step's name (`fetch-3`) or whole key: the lowest step recorded under it. */
  fromStep: stepRef,
  input: z.unknown().optional(),
  reason: z.string({ error: 'must be text' }).optional(),
});
export const forkBody = rerunBody.extend({ id: newRunId.optional() });
/**
 * The query of GET /api/v1/runs/{id}/rewind-cost and /rerun-preview: the step a rerun or fork would start from,
 * a number or a name.
 */
export const rewindCostQuery = z.strictObject({ from: stepText });

export const budgetBody = z.strictObject({
  budgetUsd: budgetUsdSchema,
  reason: z.string({ error: 'must be text' }).optional(),
});
/** A step number in a path: digits only, then the bound every step number has (PostgreSQL's integer). */
export const stepParam = z
  .string()
  .regex(/^\d{1,15}$/, 'must be a step number (digits only)')
  .transform(Number)
  .pipe(stepNumber);

export const actionParam = z.enum(RUN_ACTIONS as [RunAction, ...RunAction[]]);

/** POST /api/v1/runs/bulk's body: lib/control's own rules (the filters are this list's, checked the same way). */
export { bulkInput as bulkBody } from '../control/bulk';
