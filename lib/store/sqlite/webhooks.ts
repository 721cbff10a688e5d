/**
 * Webhooks and their outbox on SQLite. An event's deliveries are written by enqueueIn() inside the transaction
 * of the change it tells of (runs.ts's finishRun, waits.ts's approval, an operator's pause by budget), one INSERT
 * … SELECT over the subscriptions, each row inserted if absent under its derived id. A dispatcher takes due rows by
 * a conditional UPDATE inside BEGIN IMMEDIATE, so two never hold one delivery at once.
 */
import { and, desc, eq, lt, ne, or } from 'drizzle-orm';
import { ConflictError, NotFoundError } from '../../errors';
import type { DueDelivery, WebhookEventInput, WebhookStore } from '../contract';
import { webhookDeliveries, webhooks } from '../schema/sqlite';
import { type DeliveryColumns, deliveryRow, eventPayload, webhookRow } from '../shared/webhooks';
import { guard, type SqliteConnection } from './connection';

const ENQUEUE = `INSERT INTO webhook_deliveries
    (id, webhook_id, event, run_id, payload_json, status, attempts, next_attempt_at, created_at, updated_at)
  SELECT w.id || ':' || @event || ':' || @key, w.id, @event, @runId, @payload, 'pending', 0, @now, @now, @now
  FROM webhooks w
  WHERE w.paused = 0 AND (@webhookId IS NULL OR w.id = @webhookId)
    AND EXISTS (SELECT 1 FROM json_each(w.events_json) WHERE value = @event)
  ON CONFLICT (id) DO NOTHING`;

/** Inside the caller's transaction: the event's deliveries, one per subscription; how many were new. */
export function enqueueIn(c: SqliteConnection, event: WebhookEventInput, now: number): number {
  return c.prepared(ENQUEUE).run({
    event: event.event,
    key: event.key,
    runId: event.runId,
    payload: eventPayload(event, now),
    webhookId: event.webhookId ?? null,
    now,
  }).changes;
}

const CLAIM = `UPDATE webhook_deliveries SET lease_owner = @owner, lease_expires_at = @now + @lease, updated_at = @now
  WHERE id IN (SELECT d.id FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
    WHERE d.status = 'pending' AND d.next_attempt_at <= @now AND w.paused = 0
      AND (d.lease_expires_at IS NULL OR d.lease_expires_at <= @now)
    ORDER BY d.next_attempt_at, d.id LIMIT @limit)
  RETURNING id`;

const ANY_DUE = `SELECT 1 FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
  WHERE d.status = 'pending' AND d.next_attempt_at <= @now AND w.paused = 0
    AND (d.lease_expires_at IS NULL OR d.lease_expires_at <= @now) LIMIT 1`;

export function sqliteWebhooks(c: SqliteConnection): WebhookStore {
  const { orm } = c;
  const get = (id: string) => {
    const row = orm.select().from(webhooks).where(eq(webhooks.id, id)).get();
    return row ? webhookRow(row) : null;
  };
  const delivery = (id: string) => {
    const row = orm.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, id)).get();
    return row ? deliveryRow(row as DeliveryColumns) : null;
  };

  return {
    async createWebhook(w) {
      const now = c.now();
      return c.tx(() => {
        const { events, ...rest } = w;
        const inserted = orm
          .insert(webhooks)
          .values({ ...rest, eventsJson: JSON.stringify(events), paused: 0, createdAt: now, updatedAt: now })
          .onConflictDoNothing()
          .run();
        if (inserted.changes === 0) throw new ConflictError(`webhook ${w.id}`);
        return get(w.id)!;
      });
    },

    async listWebhooks() {
      return guard(() => orm.select().from(webhooks).orderBy(webhooks.createdAt, webhooks.id).all().map(webhookRow));
    },

    async getWebhook(id) {
      return guard(() => get(id));
    },

    async setWebhookPaused(id, paused) {
      const now = c.now();
      return c.tx(() => {
        const changed =
          orm
            .update(webhooks)
            .set({ paused: paused ? 1 : 0, updatedAt: now })
            .where(and(eq(webhooks.id, id), ne(webhooks.paused, paused ? 1 : 0)))
            .run().changes > 0;
        const row = get(id);
        if (!row) throw new NotFoundError(`webhook ${id}`);
        return changed ? row : null;
      });
    },

    async deleteWebhook(id) {
      return c.tx(() => {
        orm.delete(webhookDeliveries).where(eq(webhookDeliveries.webhookId, id)).run();
        return orm.delete(webhooks).where(eq(webhooks.id, id)).run().changes > 0;
      });
    },

    async enqueueWebhookEvent(event) {
      const now = c.now();
      return c.tx(() => enqueueIn(c, event, now));
    },

    async listDeliveries(filter = {}) {
      const d = webhookDeliveries;
      const after = filter.after;
      return guard(() =>
        orm
          .select()
          .from(d)
          .where(
            and(
              filter.webhookId === undefined ? undefined : eq(d.webhookId, filter.webhookId),
              filter.status === undefined ? undefined : eq(d.status, filter.status),
              after
                ? or(lt(d.createdAt, after.createdAt), and(eq(d.createdAt, after.createdAt), lt(d.id, after.id)))
                : undefined,
            ),
          )
          .orderBy(desc(d.createdAt), desc(d.id))
          .limit(filter.limit ?? 100)
          .all()
          .map((r) => deliveryRow(r as DeliveryColumns)),
      );
    },

    async getDelivery(id) {
      return guard(() => delivery(id));
    },

    async claimDueDeliveries({ owner, leaseMs, limit }) {
      const now = c.now();
      // A read first, which takes no lock: an idle outbox never costs a write transaction.
      if (!guard(() => c.prepared(ANY_DUE).get({ now }))) return [];
      return c.tx(() => {
        const taken = c.prepared<unknown[], { id: string }>(CLAIM).all({ owner, now, lease: leaseMs / 1000, limit });
        const due: DueDelivery[] = [];
        for (const { id } of taken) {
          const row = delivery(id)!;
          const hook = get(row.webhookId)!;
          due.push({ ...row, url: hook.url, secret: hook.secret });
        }
        return due.sort((a, b) => a.nextAttemptAt - b.nextAttemptAt || (a.id < b.id ? -1 : 1));
      });
    },

    async recordDeliveryAttempt(id, owner, attempt) {
      const now = c.now();
      const d = webhookDeliveries;
      return c.tx(() => {
        const row = orm
          .select({ attempts: d.attempts })
          .from(d)
          .where(and(eq(d.id, id), eq(d.leaseOwner, owner), eq(d.status, 'pending')))
          .get();
        if (!row) return false;
        const status = attempt.delivered ? 'delivered' : attempt.retryInMs === null ? 'failed' : 'pending';
        orm
          .update(d)
          .set({
            status,
            attempts: row.attempts + 1,
            lastStatus: attempt.status,
            lastError: attempt.error,
            leaseOwner: null,
            leaseExpiresAt: null,
            nextAttemptAt: status === 'pending' ? now + attempt.retryInMs! / 1000 : now,
            deliveredAt: attempt.delivered ? now : null,
            updatedAt: now,
          })
          .where(eq(d.id, id))
          .run();
        return true;
      });
    },

    async resendDelivery(id) {
      const now = c.now();
      return c.tx(() => {
        const updated = orm
          .update(webhookDeliveries)
          .set({
            status: 'pending',
            attempts: 0,
            nextAttemptAt: now,
            leaseOwner: null,
            leaseExpiresAt: null,
            updatedAt: now,
          })
          .where(eq(webhookDeliveries.id, id))
          .run();
        if (updated.changes === 0) throw new NotFoundError(`delivery ${id}`);
        return delivery(id)!;
      });
    },
  };
}
