/**
 * Webhooks and their outbox on PostgreSQL, with sqlite/webhooks.ts's semantics. An event's deliveries are written
 * by enqueueIn() on the caller's transaction, each inserted ON CONFLICT DO NOTHING under its derived id, so a
 * retried transaction (a lost answer) writes nothing twice. Dispatchers take due rows with FOR UPDATE SKIP LOCKED:
 * many on many hosts share the outbox without waiting on each other. Times are the database's clock.
 */
import { and, desc, eq, lt, ne, or, sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/node-postgres';
import type pg from 'pg';
import { ConflictError, NotFoundError } from '../../errors';
import type { DueDelivery, WebhookEventInput, WebhookStore } from '../contract';
import { webhookDeliveries, webhooks } from '../schema/pg';
import { type DeliveryColumns, deliveryRow, eventPayload, webhookRow } from '../shared/webhooks';
import type { PgConnection } from './connection';
import { withRetry, writeOnce } from './retry';

/** The delivery's columns as DeliveryRow names them, from the table aliased `d`. */
const DELIVERY = sql.raw(`d.id, d.webhook_id AS "webhookId", d.event, d.run_id AS "runId",
  d.payload_json AS "payloadJson", d.status, d.attempts, d.next_attempt_at AS "nextAttemptAt",
  d.last_status AS "lastStatus", d.last_error AS "lastError", d.created_at AS "createdAt",
  d.updated_at AS "updatedAt", d.delivered_at AS "deliveredAt"`);

/** On the caller's transaction: the event's deliveries, one per subscription; how many were new. */
export async function enqueueIn(
  c: PgConnection,
  on: pg.Pool | pg.PoolClient,
  event: WebhookEventInput,
  at?: number,
): Promise<number> {
  const when = at === undefined ? c.now() : sql`${at}::float8`;
  const payload = eventPayload(event, at ?? c.clock.now() / 1000);
  const inserted = await c.once(
    sql`INSERT INTO ${webhookDeliveries}
        (id, webhook_id, event, run_id, payload_json, status, attempts, next_attempt_at, created_at, updated_at)
      SELECT w.id || ':' || ${event.event}::text || ':' || ${event.key}::text, w.id, ${event.event}::text,
        ${event.runId}::text, ${payload}::text, 'pending', 0, t.now, t.now, t.now
      FROM ${webhooks} w, (SELECT ${when} AS now) t
      WHERE w.paused = 0 AND (${event.webhookId ?? null}::text IS NULL OR w.id = ${event.webhookId ?? null}::text)
        AND w.events_json::jsonb ? ${event.event}::text
      ON CONFLICT (id) DO NOTHING`,
    undefined,
    on,
  );
  return inserted.rowCount ?? 0;
}

export function postgresWebhooks(c: PgConnection): WebhookStore {
  const { orm } = c;
  const get = async (id: string) => {
    const [row] = await orm.select().from(webhooks).where(eq(webhooks.id, id));
    return row ? webhookRow(row) : null;
  };
  const delivery = async (id: string) =>
    (await c.query<DeliveryColumns>(sql`SELECT ${DELIVERY} FROM ${webhookDeliveries} d WHERE d.id = ${id}`)).rows[0] ??
    null;

  return {
    async createWebhook(w) {
      const { events, ...rest } = w;
      const inserted = await withRetry('createWebhook', () =>
        orm
          .insert(webhooks)
          .values({ ...rest, eventsJson: JSON.stringify(events), paused: 0, createdAt: c.now(), updatedAt: c.now() })
          .onConflictDoNothing()
          .returning(),
      );
      // A retried insert that had landed finds its own row: the same url, events and secret.
      if (inserted[0]) return webhookRow(inserted[0]);
      const existing = await withRetry('getWebhook', () => get(w.id));
      if (existing && existing.secret === w.secret && existing.url === w.url) return existing;
      throw new ConflictError(`webhook ${w.id}`);
    },

    async listWebhooks() {
      const rows = await withRetry('listWebhooks', () =>
        orm.select().from(webhooks).orderBy(webhooks.createdAt, webhooks.id),
      );
      return rows.map(webhookRow);
    },

    getWebhook: (id) => withRetry('getWebhook', () => get(id)),

    setWebhookPaused: (id, paused) =>
      writeOnce(
        'setWebhookPaused',
        async () => {
          const [updated] = await orm
            .update(webhooks)
            .set({ paused: paused ? 1 : 0, updatedAt: c.now() })
            .where(and(eq(webhooks.id, id), ne(webhooks.paused, paused ? 1 : 0)))
            .returning();
          return updated && webhookRow(updated);
        },
        () => get(id),
        (row) => row.paused === paused,
        () => new NotFoundError(`webhook ${id}`),
      ),

    async deleteWebhook(id) {
      return withRetry('deleteWebhook', () =>
        c.inTransaction(async (client) => {
          const tx = drizzle(client);
          await tx.delete(webhookDeliveries).where(eq(webhookDeliveries.webhookId, id));
          const gone = await tx.delete(webhooks).where(eq(webhooks.id, id)).returning({ id: webhooks.id });
          return gone.length > 0;
        }),
      );
    },

    enqueueWebhookEvent: (event) => withRetry('enqueueWebhookEvent', () => enqueueIn(c, c.pool, event)),

    async listDeliveries(filter = {}) {
      const d = webhookDeliveries;
      const after = filter.after;
      const rows = await withRetry('listDeliveries', () =>
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
          .limit(filter.limit ?? 100),
      );
      return rows.map((r) => deliveryRow(r as DeliveryColumns));
    },

    async getDelivery(id) {
      const row = await delivery(id);
      return row ? deliveryRow(row) : null;
    },

    /**
     * Retried as it is: a lost answer leaves its rows leased to us until the lease passes, then due to anyone.
     * Delivered late, never lost.
     */
    async claimDueDeliveries({ owner, leaseMs, limit }) {
      const taken = await c.query<DeliveryColumns & { url: string; secret: string }>(
        sql`WITH t AS (SELECT ${c.now()} AS now),
        due AS (SELECT d.id FROM ${webhookDeliveries} d JOIN ${webhooks} w ON w.id = d.webhook_id, t
          WHERE d.status = 'pending' AND d.next_attempt_at <= t.now AND w.paused = 0
            AND (d.lease_expires_at IS NULL OR d.lease_expires_at <= t.now)
          ORDER BY d.next_attempt_at, d.id LIMIT ${limit}::int
          FOR UPDATE OF d SKIP LOCKED)
        UPDATE ${webhookDeliveries} d SET lease_owner = ${owner}::text,
          lease_expires_at = t.now + ${leaseMs / 1000}::float8, updated_at = t.now
        FROM due, t, ${webhooks} w WHERE d.id = due.id AND w.id = d.webhook_id
        RETURNING ${DELIVERY}, w.url, w.secret`,
      );
      return taken.rows
        .map((r): DueDelivery => ({ ...deliveryRow(r), url: r.url, secret: r.secret }))
        .sort((a, b) => a.nextAttemptAt - b.nextAttemptAt || (a.id < b.id ? -1 : 1));
    },

    /** Fenced by the lease: a retry after a landed attempt finds the lease released and answers false. */
    async recordDeliveryAttempt(id, owner, attempt) {
      const status = attempt.delivered ? 'delivered' : attempt.retryInMs === null ? 'failed' : 'pending';
      const updated = await c.query(
        sql`WITH t AS (SELECT ${c.now()} AS now)
        UPDATE ${webhookDeliveries} d SET status = ${status}::text, attempts = d.attempts + 1,
          last_status = ${attempt.status}::int, last_error = ${attempt.error}::text,
          lease_owner = NULL, lease_expires_at = NULL,
          next_attempt_at = t.now + ${(attempt.retryInMs ?? 0) / 1000}::float8,
          delivered_at = CASE WHEN ${attempt.delivered}::boolean THEN t.now ELSE NULL END, updated_at = t.now
        FROM t WHERE d.id = ${id} AND d.lease_owner = ${owner}::text AND d.status = 'pending'`,
      );
      return updated.rowCount === 1;
    },

    async resendDelivery(id) {
      const updated = await c.query<DeliveryColumns>(
        sql`UPDATE ${webhookDeliveries} d SET status = 'pending', attempts = 0, next_attempt_at = ${c.now()},
          lease_owner = NULL, lease_expires_at = NULL, updated_at = ${c.now()}
        WHERE d.id = ${id} RETURNING ${DELIVERY}`,
      );
      if (!updated.rows[0]) throw new NotFoundError(`delivery ${id}`);
      return deliveryRow(updated.rows[0]);
    },
  };
}
