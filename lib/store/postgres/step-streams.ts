/**
 * Step streams on PostgreSQL, mirroring sqlite/step-streams.ts: an attempt's restart (seq 0) and its first
 * chunk in one transaction; times by the database's clock.
 */
import { and, asc, desc, eq } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/node-postgres';
import type { StepStreamStore } from '../contract';
import { stepStreams } from '../schema/pg';
import { checkStreamChunk } from '../shared/step-streams';
import type { PgConnection } from './connection';
import { withRetry } from './retry';

export function postgresStepStreams(c: PgConnection): StepStreamStore {
  const { orm } = c;
  const ofStep = (runId: string, step: number) => and(eq(stepStreams.runId, runId), eq(stepStreams.step, step));
  return {
    async appendStepStream(chunk) {
      checkStreamChunk(chunk);
      await withRetry('appendStepStream', () =>
        c.inTransaction(async (client) => {
          const tx = drizzle(client);
          if (chunk.seq === 0)
            await tx
              .delete(stepStreams)
              .where(and(ofStep(chunk.runId, chunk.step), eq(stepStreams.attempt, chunk.attempt)));
          await tx
            .insert(stepStreams)
            .values({ ...chunk, at: c.now() })
            .onConflictDoUpdate({
              target: [stepStreams.runId, stepStreams.step, stepStreams.attempt, stepStreams.seq],
              set: { text: chunk.text, at: c.now() },
            });
        }),
      );
    },

    async readStepStream(runId, step) {
      return withRetry('readStepStream', async () => {
        const [newest] = await orm
          .select({ attempt: stepStreams.attempt })
          .from(stepStreams)
          .where(ofStep(runId, step))
          .orderBy(desc(stepStreams.attempt))
          .limit(1);
        if (!newest) return null;
        const rows = await orm
          .select({ text: stepStreams.text })
          .from(stepStreams)
          .where(and(ofStep(runId, step), eq(stepStreams.attempt, newest.attempt)))
          .orderBy(asc(stepStreams.seq));
        return { attempt: newest.attempt, chunks: rows.map((r) => r.text) };
      });
    },
  };
}
