/**
 * Alert webhooks: subscriptions to a few events of runs and claims, and their outbox. An event is written to the
 * outbox as one row per subscription (a delivery) in the transaction of the change it tells of where the store
 * makes that change (a run failed or completed, a run parked on an approval, a run paused by its budget), and by
 * a scan otherwise (a run stalled, a claim in doubt), under an id derived from the event so a rescan inserts
 * nothing twice. A dispatcher takes due deliveries by a lease, posts them, and records the outcome: delivered,
 * due again later, or failed. Re-exported by index.ts.
 */

export const WEBHOOK_EVENTS = [
  'run.failed',
  'run.completed',
  'run.stalled',
  'run.waiting_approval',
  'run.budget_reached',
  'claim.in_doubt',
] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export interface WebhookRow {
  id: string;
  url: string;
  events: WebhookEvent[];
  /** The key each delivery is signed with (HMAC-SHA256); shown once when added, and by `list --secrets`. */
  secret: string;
  /** Paused: no new events are written for it, and its pending deliveries wait until it is resumed. */
  paused: boolean;
  /** How long a claim must have been in doubt before `claim.in_doubt` is sent to this webhook. */
  inDoubtSeconds: number;
  createdAt: number;
  updatedAt: number;
}

export interface DeliveryRow {
  /** The receiver's key to deduplicate on (the `Waybill-Delivery` header, and `id` in the body). */
  id: string;
  webhookId: string;
  event: WebhookEvent;
  runId: string | null;
  /** `{ type, at, data }`: the body posted is this with the delivery's id first. */
  payloadJson: string;
  status: DeliveryStatus;
  attempts: number;
  /** Epoch seconds: when a pending delivery is due. */
  nextAttemptAt: number;
  /** The receiver's HTTP status at the last attempt; null when none answered. */
  lastStatus: number | null;
  lastError: string | null;
  createdAt: number;
  updatedAt: number;
  deliveredAt: number | null;
}

/** A delivery taken by a dispatcher, with where it goes and what it is signed with. */
export interface DueDelivery extends DeliveryRow {
  url: string;
  secret: string;
}

/** One event, for every subscription to it (or for one webhook only: a threshold of its own decided it). */
export interface WebhookEventInput {
  event: WebhookEvent;
  /** What makes the event itself unique: `<run>:<attempt>` for a run's end, `<idem key>:<token>` for a claim. */
  key: string;
  runId: string | null;
  data: Record<string, unknown>;
  webhookId?: string;
}

/** What one attempt came to. */
export interface DeliveryAttempt {
  delivered: boolean;
  status: number | null;
  error: string | null;
  /** Not delivered: due again this much later, or null to give up (`failed`). */
  retryInMs: number | null;
}

export interface DeliveryFilter {
  webhookId?: string;
  status?: DeliveryStatus;
  limit?: number;
  /** Keyset cursor: the last row of the previous page (newest first). */
  after?: { createdAt: number; id: string };
}

export interface WebhookStore {
  /** ConflictError when the id is taken. */
  createWebhook(webhook: {
    id: string;
    url: string;
    events: WebhookEvent[];
    secret: string;
    inDoubtSeconds: number;
  }): Promise<WebhookRow>;
  /** Oldest first. */
  listWebhooks(): Promise<WebhookRow[]>;
  getWebhook(id: string): Promise<WebhookRow | null>;
  /**
   * Pauses or resumes a subscription that is not so already; null, with nothing written, when it is. The write
   * itself decides, so of calls at once exactly one changes the row. NotFoundError for an unknown id.
   */
  setWebhookPaused(id: string, paused: boolean): Promise<WebhookRow | null>;
  /** False when there was none. Its deliveries go with it. */
  deleteWebhook(id: string): Promise<boolean>;
  /**
   * Writes the event's delivery for every unpaused subscription to it, each inserted if absent: answers how many
   * were new. For the events found by a scan; the others are written by the store's own transactions.
   */
  enqueueWebhookEvent(event: WebhookEventInput): Promise<number>;
  /** Newest first. */
  listDeliveries(filter?: DeliveryFilter): Promise<DeliveryRow[]>;
  getDelivery(id: string): Promise<DeliveryRow | null>;
  /**
   * Takes up to `limit` pending deliveries that are due, whose webhook is not paused, and that no live lease
   * holds, under a lease of `leaseMs` for `owner`. On PostgreSQL rows another dispatcher is taking are skipped
   * (FOR UPDATE SKIP LOCKED), never waited on. A dispatcher killed mid-post leaves its rows to the next after
   * the lease: at least once.
   */
  claimDueDeliveries(request: { owner: string; leaseMs: number; limit: number }): Promise<DueDelivery[]>;
  /** Records an attempt of a delivery `owner` holds; false (nothing written) when it no longer holds it. */
  recordDeliveryAttempt(id: string, owner: string, attempt: DeliveryAttempt): Promise<boolean>;
  /** Due again now, its attempts counted from zero, whatever its status. NotFoundError for an unknown id. */
  resendDelivery(id: string): Promise<DeliveryRow>;
}

/** A delivery's id: the webhook's and the event's, so one event is one delivery per webhook however often written. */
export function deliveryId(webhookId: string, event: WebhookEvent, key: string): string {
  return `${webhookId}:${event}:${key}`;
}
