/**
 * Model calls on PostgreSQL, mirroring sqlite/model-calls.ts. Two gateways asking for one key at once: the
 * INSERT … ON CONFLICT DO NOTHING of the second waits for the first's commit, then its SELECT … FOR UPDATE
 * reads the row the first wrote, so exactly one leads. Leases are judged by the database's clock.
 */
import { randomUUID } from 'node:crypto';
import { and, asc, eq, sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/node-postgres';
import { IdempotencyKeyReuseError } from '../../errors';
import type { ModelCallBegin, ModelCallRow, ModelCallStore, ModelUsageRow } from '../contract';
import { modelCallChunks, modelCalls } from '../schema/pg';
import { modelUsageSql } from '../shared/model-usage';
import { RECORDED_FINGERPRINT, recordedValues } from '../shared/recorded-usage';
import type { PgConnection } from './connection';
import { withRetry } from './retry';

export function postgresModelCalls(c: PgConnection): ModelCallStore {
  const { orm } = c;
  const held = (callId: string, token: string) =>
    and(eq(modelCalls.id, callId), eq(modelCalls.leaseToken, token), eq(modelCalls.state, 'pending'));
  const expiry = (leaseMs: number) => sql`${c.now()} + ${leaseMs / 1000}::float8`;

  return {
    async beginModelCall(start) {
      return withRetry('beginModelCall', () =>
        c.inTransaction(async (client): Promise<ModelCallBegin> => {
          const tx = drizzle(client);
          const token = randomUUID();
          const id = randomUUID();
          const inserted = await tx
            .insert(modelCalls)
            .values({
              id,
              idemKey: start.idemKey,
              sentKey: start.idemKey,
              runId: start.runId,
              step: start.step,
              api: start.api,
              model: start.model,
              fingerprint: start.fingerprint,
              state: 'pending',
              framing: start.framing,
              leaseToken: token,
              leaseExpiresAt: expiry(start.leaseMs),
              startedAt: c.now(),
            })
            .onConflictDoNothing({ target: modelCalls.idemKey })
            .returning({ id: modelCalls.id });
          if (inserted.length === 1) return { kind: 'lead', callId: id, token };
          const [found] = await tx
            .select({ row: modelCalls, live: sql<boolean>`${modelCalls.leaseExpiresAt} > ${c.now()}` })
            .from(modelCalls)
            .where(eq(modelCalls.idemKey, start.idemKey!))
            .for('update');
          // Retired or abandoned between the two statements: the caller asks again.
          if (!found) throw new Error(`model call ${start.idemKey} vanished while being read; try again`);
          const { row, live } = found;
          if (row.fingerprint !== start.fingerprint)
            throw new IdempotencyKeyReuseError(start.idemKey!, row.fingerprint, start.fingerprint);
          if (row.state === 'complete') return { kind: 'answered', call: row };
          if (live) return { kind: 'in_flight', call: row };
          // Its gateway died mid-call: what it had of the answer goes, and this request asks again.
          await tx.delete(modelCallChunks).where(eq(modelCallChunks.callId, row.id));
          await tx
            .update(modelCalls)
            .set({ leaseToken: token, leaseExpiresAt: expiry(start.leaseMs), startedAt: c.now() })
            .where(eq(modelCalls.id, row.id));
          return { kind: 'lead', callId: row.id, token };
        }),
      );
    },

    async renewModelCall(callId, token, leaseMs) {
      const done = await withRetry('renewModelCall', () =>
        orm
          .update(modelCalls)
          .set({ leaseExpiresAt: expiry(leaseMs) })
          .where(held(callId, token))
          .returning({ id: modelCalls.id }),
      );
      return done.length === 1;
    },

    async appendModelCallChunks(callId, token, fromSeq, chunks) {
      return withRetry('appendModelCallChunks', () =>
        c.inTransaction(async (client) => {
          const tx = drizzle(client);
          const [row] = await tx.select({ id: modelCalls.id }).from(modelCalls).where(held(callId, token)).for('share');
          if (!row) return false;
          if (chunks.length > 0)
            await tx
              .insert(modelCallChunks)
              .values(chunks.map((data, i) => ({ callId, seq: fromSeq + i, data })))
              .onConflictDoNothing();
          return true;
        }),
      );
    },

    async completeModelCall(callId, token, answer) {
      const done = await withRetry('completeModelCall', () =>
        orm
          .update(modelCalls)
          .set({ ...answer, state: 'complete', leaseToken: null, leaseExpiresAt: null, completedAt: c.now() })
          .where(held(callId, token))
          .returning({ id: modelCalls.id }),
      );
      return done.length === 1;
    },

    async abandonModelCall(callId, token) {
      await withRetry('abandonModelCall', () =>
        c.inTransaction(async (client) => {
          const tx = drizzle(client);
          const gone = await tx.delete(modelCalls).where(held(callId, token)).returning({ id: modelCalls.id });
          if (gone.length === 1) await tx.delete(modelCallChunks).where(eq(modelCallChunks.callId, callId));
        }),
      );
    },

    async recordModelUsage(usage) {
      const values = { ...recordedValues(usage), startedAt: c.now(), completedAt: c.now() };
      const stored = await withRetry('recordModelUsage', () =>
        orm
          .insert(modelCalls)
          .values({ id: randomUUID(), ...values })
          .onConflictDoUpdate({ target: modelCalls.idemKey, set: values, setWhere: eq(modelCalls.api, 'recorded') })
          .returning({ id: modelCalls.id }),
      );
      if (stored.length === 1) return;
      // The key is a gateway call's: it was asked upstream under it, and a report must not overwrite its answer.
      const [found] = await withRetry('recordModelUsage', () =>
        orm
          .select({ fingerprint: modelCalls.fingerprint })
          .from(modelCalls)
          .where(eq(modelCalls.idemKey, usage.idemKey)),
      );
      throw new IdempotencyKeyReuseError(usage.idemKey, found?.fingerprint ?? '(gone)', RECORDED_FINGERPRINT);
    },

    async getModelCall(idemKey) {
      const [row] = await withRetry('getModelCall', () =>
        orm.select().from(modelCalls).where(eq(modelCalls.idemKey, idemKey)),
      );
      return row;
    },

    async readModelCallChunks(callId) {
      const rows = await withRetry('readModelCallChunks', () =>
        orm
          .select({ data: modelCallChunks.data })
          .from(modelCallChunks)
          .where(eq(modelCallChunks.callId, callId))
          .orderBy(asc(modelCallChunks.seq)),
      );
      return rows.map((r) => r.data);
    },

    async listModelCalls(filter): Promise<ModelCallRow[]> {
      return c.readBuilt(
        'listModelCalls',
        orm
          .select()
          .from(modelCalls)
          .where(eq(modelCalls.runId, filter.runId))
          .orderBy(asc(modelCalls.startedAt), asc(modelCalls.id)),
      );
    },

    async sumModelCalls(filter): Promise<ModelUsageRow[]> {
      const byWorkflow = filter.workflow !== undefined;
      const text = modelUsageSql('postgres', byWorkflow);
      const rows = await withRetry('sumModelCalls', () =>
        c.pool.query<ModelUsageRow>(text, byWorkflow ? [filter.workflow] : []),
      );
      return rows.rows;
    },
  };
}
