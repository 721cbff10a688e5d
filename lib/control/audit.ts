/**
 * The operators' log: the one writer (every operation in lib/control records its line here, after its
 * change took effect) and the one reader (the /audit page, GET /api/v1/audit and `waybill audit`).
 *
 * One detail convention for every line: what the action itself notes ("workflow notify", "forced: the lease
 * was live", "expired 2 orphaned claim(s): …"), then the operator's reason as `reason: …`, joined by "; ";
 * null when there is neither. The run's own timeline (step_events) says what changed; this says who.
 */
import { z } from 'zod';
import { ControlInputError } from '../errors';
import { auditDetail } from '../reason';
import type { AuditEntry } from '../store/contract';
import { recordSpan, tracingEnabled } from '../tracing';
import { authorize, type Caller } from './caller';
import { validate } from './errors';
import { exactText, runRef } from './fields';
import type { ControlDeps, ControlStore } from './store';

export const AUDIT_ACTIONS = [
  'start',
  'pause',
  'resume',
  'cancel',
  'retry',
  'expire',
  'resolve',
  'sweep',
  'prune',
  'token',
  'rerun',
  'fork',
  'approve',
  'reject',
  'signal',
  'budget',
  'schedule-add',
  'schedule-pause',
  'schedule-resume',
  'schedule-delete',
  'emit',
  'webhook-add',
  'webhook-pause',
  'webhook-resume',
  'webhook-delete',
  'webhook-resend',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

export async function record(
  store: ControlStore,
  caller: Caller,
  entry: {
    action: AuditAction;
    target: string;
    runId?: string | null;
    note?: string | null;
    reason?: string;
  },
): Promise<AuditEntry> {
  const audited = await store.recordAudit({
    actor: caller.actor,
    role: caller.role,
    action: entry.action,
    target: entry.target,
    runId: entry.runId ?? null,
    detail: auditDetail({ note: entry.note, reason: entry.reason }),
  });
  if (tracingEnabled()) await operatorSpan(store, caller, entry).catch(() => undefined);
  return audited;
}

/**
 * Every action that took effect is audited here, so here is where it becomes an `operator` span (lib/tracing.ts):
 * in its run's trace when it names a run, so a pause or an approval shows among the run's own spans.
 */
async function operatorSpan(
  store: ControlStore,
  caller: Caller,
  entry: { action: AuditAction; target: string; runId?: string | null },
): Promise<void> {
  const parent = entry.runId ? ((await store.getRun(entry.runId))?.traceparent ?? null) : null;
  await recordSpan('operator', {
    parent,
    attributes: {
      'waybill.action': entry.action,
      'waybill.target': entry.target,
      'waybill.actor': caller.actor,
      'waybill.role': caller.role,
      'waybill.channel': caller.channel,
      ...(entry.runId ? { 'waybill.run_id': entry.runId } : {}),
    },
  });
}

export const AUDIT_PAGE_MAX = 500;

const epoch = z.number({ error: 'must be a time' }).finite('must be a time').min(0, 'must not be before 1970');

const auditQuery = z.strictObject({
  actor: exactText(200).optional(),
  action: z.enum(AUDIT_ACTIONS, { error: `must be one of ${AUDIT_ACTIONS.join(', ')}` }).optional(),
  runId: runRef.optional(),
  since: epoch.optional(),
  until: epoch.optional(),
  limit: z
    .number({ error: 'must be a number' })
    .int('must be a whole number')
    .min(1, 'must be at least 1')
    .max(AUDIT_PAGE_MAX, `must be at most ${AUDIT_PAGE_MAX}`)
    .optional(),
  before: z
    .number({ error: 'must be a number' })
    .int('must be a whole number')
    .positive('must be a positive id')
    .max(Number.MAX_SAFE_INTEGER, 'is not an id')
    .optional(),
});

export type AuditQueryInput = z.input<typeof auditQuery>;

/** A page of the log, newest first; `next` is the id to pass as `before` for the page after, null on the last. */
export async function list(
  deps: ControlDeps,
  caller: Caller,
  input: AuditQueryInput,
): Promise<{ entries: AuditEntry[]; next: number | null }> {
  authorize(caller, 'viewer');
  const query = validate(auditQuery, input);
  if (query.since !== undefined && query.until !== undefined && query.until < query.since) {
    throw ControlInputError.of({ until: ['must not be before since'] });
  }
  const limit = query.limit ?? 50;
  const store = await deps.store();
  const rows = await store.listAudit({
    limit: limit + 1,
    beforeId: query.before,
    runId: query.runId,
    actor: query.actor,
    action: query.action,
    since: query.since,
    until: query.until,
  });
  const entries = rows.slice(0, limit);
  return { entries, next: rows.length > limit ? entries.at(-1)!.id : null };
}

/**
 * A time as people and scripts write it, to epoch seconds: `1764590400` or `1764590400.5` (the tables'
 * unit), or an ISO 8601 date or date-time (`2026-12-01`, `2026-12-01T10:00:00Z`). Null when it is neither.
 */
export function parseTime(value: string): number | null {
  if (/^\d{1,12}(\.\d{1,6})?$/.test(value)) return Number(value);
  if (!/^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/.test(value)) return null;
  const ms = Date.parse(value);
  return Number.isFinite(ms) ? ms / 1000 : null;
}

export const TIME_HINT = 'epoch seconds or an ISO 8601 date-time (2026-12-01T10:00:00Z)';
