/**
 * Alert webhooks at run time: add, pause, resume, delete, and the one reader of the subscriptions and of their
 * deliveries (the webhooks page, the API and `waybill webhooks`); resend a delivery. Each authorizes, validates
 * (errors name the field), and only then writes; the audit line follows the change. The secret is shown once,
 * in what add answers: every later view shows its last four characters.
 */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { claimExpiresAt } from '../domain/claim-expiry';
import { storableText } from '../domain/text';
import { InvalidTransitionError, NotFoundError } from '../errors';
import {
  DELIVERY_STATUSES,
  type DeliveryRow,
  type DeliveryStatus,
  WEBHOOK_EVENTS,
  type WebhookEvent,
  type WebhookRow,
} from '../store/contract';
import { record } from './audit';
import { authorize, type Caller } from './caller';
import { validate } from './errors';
import { reasonField } from './fields';
import { readStallFacts, STALL_SCAN, type StallSettings, stallOf } from './stalled';
import type { ControlDeps, ControlStore } from './store';
import { jsonValue } from './views';

const eventName = z.enum(WEBHOOK_EVENTS, { error: `must be one of ${WEBHOOK_EVENTS.join(', ')}` });

export const addInput = z.strictObject({
  url: z
    .string({ error: 'must be a URL' })
    .max(2000, 'must be at most 2000 characters')
    .superRefine(storableText)
    .refine((v) => {
      try {
        return ['http:', 'https:'].includes(new URL(v).protocol);
      } catch {
        return false;
      }
    }, 'must be an http:// or https:// URL'),
  events: z
    .array(eventName, { error: `must be a list of events (${WEBHOOK_EVENTS.join(', ')})` })
    .min(1, `choose at least one event (${WEBHOOK_EVENTS.join(', ')})`)
    .transform((events) => [...new Set(events)]),
  /** Given: at least 16 characters; else one is made. */
  secret: z
    .string({ error: 'must be a string' })
    .min(16, 'must be at least 16 characters')
    .max(200, 'must be at most 200 characters')
    .superRefine(storableText)
    .optional(),
  inDoubtSeconds: z
    .number({ error: 'must be a number of seconds' })
    .int('must be a whole number of seconds')
    .min(1, 'must be at least 1 second')
    .max(7 * 86_400, 'must be at most 7 days (604800 seconds)')
    .optional(),
  reason: reasonField,
});

const webhookId = z
  .string({ error: 'must be a webhook id' })
  .min(1, 'must not be empty')
  .max(100, 'must be at most 100 characters')
  .superRefine(storableText);

export const idInput = z.strictObject({ id: webhookId, reason: reasonField });

export const deliveryInput = z.strictObject({
  id: z
    .string({ error: 'must be a delivery id' })
    .min(1, 'must not be empty')
    .max(1000, 'is too long')
    .superRefine(storableText),
  reason: reasonField,
});

export const DELIVERIES_PAGE_MAX = 500;

export const deliveriesQuery = z.strictObject({
  webhookId: webhookId.optional(),
  status: z.enum(DELIVERY_STATUSES, { error: `must be one of ${DELIVERY_STATUSES.join(', ')}` }).optional(),
  limit: z
    .number({ error: 'must be a number' })
    .int('must be a whole number')
    .min(1, 'must be at least 1')
    .max(DELIVERIES_PAGE_MAX, `must be at most ${DELIVERIES_PAGE_MAX}`)
    .optional(),
});

/** A subscription as the page, the API and the CLI's --json show it: the secret as its last four characters. */
export function webhookView(row: WebhookRow) {
  return {
    id: row.id,
    url: row.url,
    events: row.events,
    paused: row.paused,
    inDoubtSeconds: row.inDoubtSeconds,
    secretHint: `…${row.secret.slice(-4)}`,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}
export type WebhookView = ReturnType<typeof webhookView>;

export function deliveryView(row: DeliveryRow) {
  return {
    id: row.id,
    webhookId: row.webhookId,
    event: row.event,
    runId: row.runId,
    status: row.status,
    attempts: row.attempts,
    nextAttemptAt: row.status === 'pending' ? row.nextAttemptAt : null,
    lastStatus: row.lastStatus,
    lastError: row.lastError,
    payload: jsonValue(row.payloadJson),
    createdAt: row.createdAt,
    deliveredAt: row.deliveredAt,
  };
}
export type DeliveryView = ReturnType<typeof deliveryView>;

/** Every subscription, oldest first: a viewer's read. */
export async function list(deps: ControlDeps, caller: Caller): Promise<WebhookView[]> {
  authorize(caller, 'viewer');
  const store = await deps.store();
  return (await store.listWebhooks()).map(webhookView);
}

/** Subscribes a URL to events. Answers the new subscription with its secret: the one time it is shown. */
export async function add(
  deps: ControlDeps,
  caller: Caller,
  input: z.input<typeof addInput>,
): Promise<WebhookView & { secret: string }> {
  authorize(caller, 'operator');
  const given = validate(addInput, input);
  const store = await deps.store();
  const row = await store.createWebhook({
    id: `wh_${randomBytes(6).toString('hex')}`,
    url: given.url,
    events: given.events as WebhookEvent[],
    secret: given.secret ?? `whsec_${randomBytes(24).toString('base64url')}`,
    inDoubtSeconds: given.inDoubtSeconds ?? 300,
  });
  await record(store, caller, {
    action: 'webhook-add',
    target: row.id,
    note: `${row.url} for ${row.events.join(', ')}`,
    reason: given.reason,
  });
  return { ...webhookView(row), secret: row.secret };
}

/**
 * Pauses (no new events are written for it, its pending deliveries wait) or resumes a subscription. Pausing one
 * that is paused, or resuming one that is not, is INVALID_TRANSITION (409) with nothing written, as a run's pause
 * or resume is: the audit keeps actions that took effect, and a script sees that its pause did not. The store's
 * write decides which, so of operators pausing at once one is audited and the others are told 409.
 */
export async function setPaused(
  deps: ControlDeps,
  caller: Caller,
  paused: boolean,
  input: z.input<typeof idInput>,
): Promise<WebhookView> {
  authorize(caller, 'operator');
  const given = validate(idInput, input);
  const store = await deps.store();
  const row = await store.setWebhookPaused(given.id, paused);
  if (!row)
    throw new InvalidTransitionError(
      given.id,
      paused ? 'pause' : 'resume',
      paused ? 'paused already' : 'not paused',
      'webhook',
    );
  await record(store, caller, {
    action: paused ? 'webhook-pause' : 'webhook-resume',
    target: given.id,
    reason: given.reason,
  });
  return webhookView(row);
}

/** Deletes a subscription and its deliveries. */
export async function remove(deps: ControlDeps, caller: Caller, input: z.input<typeof idInput>): Promise<void> {
  authorize(caller, 'operator');
  const given = validate(idInput, input);
  const store = await deps.store();
  if (!(await store.deleteWebhook(given.id))) throw new NotFoundError(`webhook ${given.id}`);
  await record(store, caller, { action: 'webhook-delete', target: given.id, reason: given.reason });
}

/** Deliveries newest first, of one subscription or all, of one status or all: a viewer's read. */
export async function deliveries(
  deps: ControlDeps,
  caller: Caller,
  input: z.input<typeof deliveriesQuery> = {},
): Promise<DeliveryView[]> {
  authorize(caller, 'viewer');
  const query = validate(deliveriesQuery, input);
  const store = await deps.store();
  const rows = await store.listDeliveries({
    webhookId: query.webhookId,
    status: query.status as DeliveryStatus | undefined,
    limit: query.limit ?? 100,
  });
  return rows.map(deliveryView);
}

/** Sends a delivery again (delivered or failed alike): due now, its attempts counted afresh, under its same id. */
export async function resend(
  deps: ControlDeps,
  caller: Caller,
  input: z.input<typeof deliveryInput>,
): Promise<DeliveryView> {
  authorize(caller, 'operator');
  const given = validate(deliveryInput, input);
  const store = await deps.store();
  const row = await store.resendDelivery(given.id);
  await record(store, caller, {
    action: 'webhook-resend',
    target: row.id,
    runId: row.runId,
    note: `${row.event} to ${row.webhookId}`,
    reason: given.reason,
  });
  return deliveryView(row);
}

/**
 * The alert events no transaction of the store writes, because they are not a change but the lack of one: a run
 * stalled (the one stall judge, lib/control/stalled.ts) and a claim in doubt longer than a webhook's threshold.
 * Found by this scan, which each worker's dispatcher runs now and then (lib/cli/worker.ts hands it in), and
 * written under ids derived from what they tell of — a stalled run's execution (`<run>:<attempts>`), an in-doubt
 * claim's take (`<key>:<token>`) — so a rescan, by this worker or any other, writes each once. Reads nothing
 * when no webhook subscribes to either. Answers how many deliveries were new.
 */
export async function scanAlerts(
  store: ControlStore,
  settings: StallSettings & { claimTtlMs: number },
): Promise<number> {
  const hooks = (await store.listWebhooks()).filter((w) => !w.paused);
  const stalls = hooks.some((w) => w.events.includes('run.stalled'));
  const doubts = hooks.filter((w) => w.events.includes('claim.in_doubt'));
  let written = 0;
  if (stalls) {
    const facts = await readStallFacts(store, settings);
    const [running, queued] = await Promise.all(
      (['running', 'queued'] as const).map((status) =>
        store.listRuns({ status, limit: STALL_SCAN, claimTtlMs: settings.claimTtlMs }),
      ),
    );
    for (const summary of [...running!, ...queued!]) {
      const stall = stallOf(summary, facts);
      if (!stall) continue;
      const run = await store.getRun(summary.id);
      if (!run) continue;
      written += await store.enqueueWebhookEvent({
        event: 'run.stalled',
        key: `${run.id}:${run.attempts}`,
        runId: run.id,
        data: { runId: run.id, workflow: run.workflow, status: run.status, reason: stall.kind, message: stall.message },
      });
    }
  }
  if (doubts.length > 0) {
    const nowS = settings.now / 1000;
    const orphaned = await store.listClaims({ orphanedOnly: true, claimTtlMs: settings.claimTtlMs, limit: STALL_SCAN });
    for (const claim of orphaned) {
      const since = claimExpiresAt(claim, settings.claimTtlMs);
      for (const hook of doubts) {
        if (nowS - since < hook.inDoubtSeconds) continue;
        written += await store.enqueueWebhookEvent({
          event: 'claim.in_doubt',
          key: `${claim.idemKey}:${claim.token ?? claim.claimedAt}`,
          runId: claim.runId,
          webhookId: hook.id,
          data: {
            runId: claim.runId,
            key: claim.idemKey,
            step: claim.step,
            workerId: claim.workerId,
            inDoubtSince: since,
          },
        });
      }
    }
  }
  return written;
}
