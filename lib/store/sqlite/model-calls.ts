/**
 * Model calls on SQLite (contract/model-calls.ts). Each decision is one BEGIN IMMEDIATE transaction: the write
 * lock serializes two gateways asking for one key, so exactly one of them leads.
 */
import { randomUUID } from 'node:crypto';
import { and, asc, eq } from 'drizzle-orm';
import { IdempotencyKeyReuseError } from '../../errors';
import type { ModelCallRow, ModelCallStore, ModelUsageRow } from '../contract';
import { modelCallChunks, modelCalls } from '../schema/sqlite';
import { modelUsageSql } from '../shared/model-usage';
import { RECORDED_FINGERPRINT, recordedValues } from '../shared/recorded-usage';
import { guard, type SqliteConnection } from './connection';

export function sqliteModelCalls(c: SqliteConnection): ModelCallStore {
  const { orm } = c;
  const held = (callId: string, token: string) =>
    and(eq(modelCalls.id, callId), eq(modelCalls.leaseToken, token), eq(modelCalls.state, 'pending'));

  return {
    async beginModelCall(start) {
      const now = c.now();
      const lease = { leaseToken: randomUUID(), leaseExpiresAt: now + start.leaseMs / 1000 };
      return c.tx(() => {
        const found = start.idemKey
          ? orm.select().from(modelCalls).where(eq(modelCalls.idemKey, start.idemKey)).get()
          : undefined;
        if (found && found.fingerprint !== start.fingerprint)
          throw new IdempotencyKeyReuseError(start.idemKey!, found.fingerprint, start.fingerprint);
        if (found?.state === 'complete') return { kind: 'answered' as const, call: found };
        if (found && (found.leaseExpiresAt ?? 0) > now) return { kind: 'in_flight' as const, call: found };
        if (found) {
          // Its gateway died mid-call: what it had of the answer goes, and this request asks again.
          orm.delete(modelCallChunks).where(eq(modelCallChunks.callId, found.id)).run();
          orm
            .update(modelCalls)
            .set({ ...lease, startedAt: now })
            .where(eq(modelCalls.id, found.id))
            .run();
          return { kind: 'lead' as const, callId: found.id, token: lease.leaseToken };
        }
        const id = randomUUID();
        orm
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
            ...lease,
            startedAt: now,
          })
          .run();
        return { kind: 'lead' as const, callId: id, token: lease.leaseToken };
      });
    },

    async renewModelCall(callId, token, leaseMs) {
      const leaseExpiresAt = c.now() + leaseMs / 1000;
      return guard(() => orm.update(modelCalls).set({ leaseExpiresAt }).where(held(callId, token)).run()).changes === 1;
    },

    async appendModelCallChunks(callId, token, fromSeq, chunks) {
      return c.tx(() => {
        if (!orm.select({ id: modelCalls.id }).from(modelCalls).where(held(callId, token)).get()) return false;
        for (const [i, data] of chunks.entries())
          orm
            .insert(modelCallChunks)
            .values({ callId, seq: fromSeq + i, data })
            .run();
        return true;
      });
    },

    async completeModelCall(callId, token, answer) {
      const now = c.now();
      const done = guard(() =>
        orm
          .update(modelCalls)
          .set({ ...answer, state: 'complete', leaseToken: null, leaseExpiresAt: null, completedAt: now })
          .where(held(callId, token))
          .run(),
      );
      return done.changes === 1;
    },

    async abandonModelCall(callId, token) {
      c.tx(() => {
        if (orm.delete(modelCalls).where(held(callId, token)).run().changes === 1)
          orm.delete(modelCallChunks).where(eq(modelCallChunks.callId, callId)).run();
      });
    },

    async recordModelUsage(usage) {
      const now = c.now();
      const values = { ...recordedValues(usage), startedAt: now, completedAt: now };
      c.tx(() => {
        const found = orm.select().from(modelCalls).where(eq(modelCalls.idemKey, usage.idemKey)).get();
        if (found && found.api !== 'recorded')
          throw new IdempotencyKeyReuseError(usage.idemKey, found.fingerprint, RECORDED_FINGERPRINT);
        if (found) orm.update(modelCalls).set(values).where(eq(modelCalls.id, found.id)).run();
        else
          orm
            .insert(modelCalls)
            .values({ id: randomUUID(), ...values })
            .run();
      });
    },

    async getModelCall(idemKey) {
      return guard(() => orm.select().from(modelCalls).where(eq(modelCalls.idemKey, idemKey)).get());
    },

    async readModelCallChunks(callId) {
      return guard(() =>
        orm
          .select({ data: modelCallChunks.data })
          .from(modelCallChunks)
          .where(eq(modelCallChunks.callId, callId))
          .orderBy(asc(modelCallChunks.seq))
          .all()
          .map((r) => r.data),
      );
    },

    async listModelCalls(filter): Promise<ModelCallRow[]> {
      return guard(() =>
        orm
          .select()
          .from(modelCalls)
          .where(eq(modelCalls.runId, filter.runId))
          .orderBy(asc(modelCalls.startedAt), asc(modelCalls.id))
          .all(),
      );
    },

    async sumModelCalls(filter): Promise<ModelUsageRow[]> {
      const { workflow } = filter;
      return guard(() =>
        workflow === undefined
          ? c.prepared<[], ModelUsageRow>(modelUsageSql('sqlite', false)).all()
          : c.prepared<[{ workflow: string }], ModelUsageRow>(modelUsageSql('sqlite', true)).all({ workflow }),
      );
    },
  };
}
