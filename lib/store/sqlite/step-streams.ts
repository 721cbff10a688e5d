/**
 * Step streams on SQLite (contract/step-streams.ts): each append one BEGIN IMMEDIATE transaction, so an
 * attempt's restart (seq 0) and its first chunk land together.
 */
import { and, asc, desc, eq } from 'drizzle-orm';
import type { StepStreamStore } from '../contract';
import { stepStreams } from '../schema/sqlite';
import { checkStreamChunk } from '../shared/step-streams';
import { guard, type SqliteConnection } from './connection';

export function sqliteStepStreams(c: SqliteConnection): StepStreamStore {
  const { orm } = c;
  const ofStep = (runId: string, step: number) => and(eq(stepStreams.runId, runId), eq(stepStreams.step, step));
  return {
    async appendStepStream(chunk) {
      checkStreamChunk(chunk);
      const at = c.now();
      c.tx(() => {
        if (chunk.seq === 0)
          orm
            .delete(stepStreams)
            .where(and(ofStep(chunk.runId, chunk.step), eq(stepStreams.attempt, chunk.attempt)))
            .run();
        orm
          .insert(stepStreams)
          .values({ ...chunk, at })
          .onConflictDoUpdate({
            target: [stepStreams.runId, stepStreams.step, stepStreams.attempt, stepStreams.seq],
            set: { text: chunk.text, at },
          })
          .run();
      });
    },

    async readStepStream(runId, step) {
      return guard(() => {
        const newest = orm
          .select({ attempt: stepStreams.attempt })
          .from(stepStreams)
          .where(ofStep(runId, step))
          .orderBy(desc(stepStreams.attempt))
          .limit(1)
          .get();
        if (!newest) return null;
        const rows = orm
          .select({ text: stepStreams.text })
          .from(stepStreams)
          .where(and(ofStep(runId, step), eq(stepStreams.attempt, newest.attempt)))
          .orderBy(asc(stepStreams.seq))
          .all();
        return { attempt: newest.attempt, chunks: rows.map((r) => r.text) };
      });
    },
  };
}
