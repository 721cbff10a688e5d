/**
 * Published workflows on SQLite. A worker's publication is one transaction, so a reader never sees its
 * workflows without its served list or the reverse.
 */
import { and, asc, eq, gte, isNotNull, isNull, sql } from 'drizzle-orm';
import type { WorkflowStore } from '../contract';
import { runs, workers, workflows } from '../schema/sqlite';
import { eventsJson, limitsJson, withServers } from '../shared/workflow-servers';
import { guard, type SqliteConnection } from './connection';

export function sqliteWorkflows(c: SqliteConnection): WorkflowStore {
  const { orm } = c;
  return {
    async publishWorkflows(workerId, published) {
      const now = c.now();
      c.tx(() => {
        for (const w of published) {
          const row = {
            description: w.description,
            inputSchemaJson: w.inputSchemaJson,
            totalSteps: w.totalSteps,
            version: w.version,
            eventsJson: eventsJson(w.events),
            limitsJson: limitsJson(w.limits),
            publishedBy: workerId,
            updatedAt: now,
          };
          orm
            .insert(workflows)
            .values({ name: w.name, ...row })
            .onConflictDoUpdate({ target: workflows.name, set: row })
            .run();
        }
        orm
          .update(workers)
          .set({ workflowsJson: JSON.stringify(published.map((w) => w.name)) })
          .where(eq(workers.id, workerId))
          .run();
      });
    },

    async listPublishedWorkflows(options) {
      const liveSince = c.now() - options.liveWithinMs / 1000;
      return guard(() => {
        const rows = orm
          .select({
            name: workflows.name,
            description: workflows.description,
            inputSchemaJson: workflows.inputSchemaJson,
            totalSteps: workflows.totalSteps,
            version: workflows.version,
            eventsJson: workflows.eventsJson,
            limitsJson: workflows.limitsJson,
            publishedBy: workflows.publishedBy,
            updatedAt: workflows.updatedAt,
          })
          .from(workflows)
          .orderBy(asc(workflows.name))
          .all();
        const live = orm
          .select({ id: workers.id, workflowsJson: sql<string>`${workers.workflowsJson}` })
          .from(workers)
          .where(and(isNull(workers.stoppedAt), gte(workers.heartbeatAt, liveSince), isNotNull(workers.workflowsJson)))
          .orderBy(asc(workers.id))
          .all();
        return withServers(rows, live);
      });
    },

    async setRunTotal(id, workerId, totalSteps) {
      guard(() =>
        orm
          .update(runs)
          .set({ totalSteps })
          .where(and(eq(runs.id, id), eq(runs.owner, workerId), isNull(runs.totalSteps)))
          .run(),
      );
    },
  };
}
