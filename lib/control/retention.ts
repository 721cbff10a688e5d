/**
 * Retention: prune finished runs older than a limit, in batches (lib/store/shared/prune.ts), with one audit line
 * saying what went. A dry run only counts, and is not an action: nothing is audited. The workers' periodic
 * prune (WAYBILL_PRUNE_OLDER_THAN, lib/engine/prune.ts) is configuration, not an operator's decision, and
 * does not come through here.
 */
import { z } from 'zod';
import { durationSchema, MIN_RETENTION_MS } from '../duration';
import { ControlInputError } from '../errors';
import type { PruneCounts } from '../store/contract';
import { pruneAll, rowsIn } from '../store/shared/prune';
import { record } from './audit';
import { authorize, type Caller, forceHint } from './caller';
import { validate } from './errors';
import { reasonField } from './fields';
import type { ControlDeps } from './store';

const pruneInput = z.strictObject({
  olderThan: z
    .string({ error: 'is required (a duration such as 30d)' })
    .refine((text) => durationSchema.safeParse(text).success, {
      // The duration rule's own words ("must be a whole number and a unit …", "must be more than 0").
      error: (issue) => durationSchema.safeParse(issue.input).error?.issues[0]?.message ?? 'is not a duration',
    }),
  force: z.boolean({ error: 'must be true or false' }).optional(),
  includeExternal: z.boolean({ error: 'must be true or false' }).optional(),
  batchSize: z
    .number({ error: 'must be a number' })
    .int('must be a whole number')
    .min(1, 'must be at least 1')
    .max(100_000, 'must be at most 100000')
    .optional(),
  dryRun: z.boolean({ error: 'must be true or false' }).optional(),
  reason: reasonField,
});

export interface PruneReport extends PruneCounts {
  dryRun: boolean;
  olderThan: string;
  /** Epoch seconds: runs finished before this were pruned. */
  before: number;
  includeExternal: boolean;
  /** Stopped between batches by the signal: what was removed stays removed. */
  interrupted: boolean;
}

export async function prune(
  deps: ControlDeps,
  caller: Caller,
  input: z.input<typeof pruneInput>,
  options: {
    /** This host's clock, in ms: against a limit of a day or more, seconds of skew from the database do not matter. */
    nowMs: number;
    signal?: AbortSignal;
    /** Called once with what the prune will remove, then after each batch with the rows removed so far. */
    onPlan?: (plan: PruneCounts) => void;
    onBatch?: (soFar: PruneCounts) => void;
  },
): Promise<PruneReport> {
  authorize(caller, 'operator');
  const given = validate(pruneInput, input);
  const olderThanMs = durationSchema.parse(given.olderThan);
  if (olderThanMs < MIN_RETENTION_MS && !given.force) {
    throw ControlInputError.of({
      olderThan: [
        `${given.olderThan} is under 24h, and a pruned idempotency key can no longer deduplicate a retry (${forceHint(caller)} to prune anyway)`,
      ],
    });
  }
  const request = {
    before: options.nowMs / 1000 - olderThanMs / 1000,
    includeExternal: Boolean(given.includeExternal),
    batchSize: given.batchSize ?? 500,
  };
  const store = await deps.store();
  const plan = await store.planPrune(request);
  const shape = { olderThan: given.olderThan, before: request.before, includeExternal: request.includeExternal };
  if (given.dryRun) return { dryRun: true, interrupted: false, ...shape, ...plan };
  options.onPlan?.(plan);
  const removed = await pruneAll(store, request, {
    signal: options.signal,
    onBatch: (_, soFar) => options.onBatch?.(soFar),
  });
  const interrupted = Boolean(options.signal?.aborted);
  if (rowsIn(removed) > 0 || removed.external > 0) {
    await record(store, caller, {
      action: 'prune',
      target: '*',
      note: `${interrupted ? 'interrupted; pruned so far' : 'pruned'} ${describeCounts(removed, given.olderThan)}`,
      reason: given.reason,
    });
  }
  return { dryRun: false, interrupted, ...shape, ...removed };
}

/** "2 finished run(s) older than 30d: 40 committed, 80 events, 2 progress rows[, 300 log lines]" — the CLI's words and the audit's. */
export function describeCounts(c: PruneCounts, olderThan: string): string {
  const what = `${c.runs} finished run(s)${c.external ? ` and ${c.external} outside client run(s)` : ''} older than ${olderThan}`;
  // Log lines only when there were some: most runs are no program's and print nothing.
  return `${what}: ${c.committed} committed, ${c.events} events, ${c.progress} progress rows${c.logs ? `, ${c.logs} log lines` : ''}`;
}
