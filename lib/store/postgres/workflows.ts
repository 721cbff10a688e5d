/**
 * Published workflows on PostgreSQL, with sqlite/workflows.ts's semantics. Times come from the database's
 * clock (plus the injected skew), as every lease and heartbeat does. Publishing is idempotent, so a retry
 * after a lost answer writes the same rows again.
 */
import { and, asc, eq, isNull, sql } from 'drizzle-orm';
import type { WorkflowStore } from '../contract';
import { runs, workers, workflows } from '../schema/pg';
import { eventsJson, limitsJson, withServers } from '../shared/workflow-servers';
import type { PgConnection } from './connection';
import { withRetry } from './retry';

export function postgresWorkflows(c: PgConnection): WorkflowStore {
  return {
    /** Retried whole: the upserts and the served list are idempotent. */
    async publishWorkflows(workerId, published) {
      await withRetry('publishWorkflows', () =>
        c.inTransaction(async (client) => {
          for (const w of published) {
            await c.once(
              sql`INSERT INTO ${workflows} (name, description, input_schema_json, total_steps, version, events_json, limits_json, published_by, updated_at)
            VALUES (${w.name}, ${w.description}, ${w.inputSchemaJson}, ${w.totalSteps}::int, ${w.version}, ${eventsJson(w.events)}, ${limitsJson(w.limits)}, ${workerId}, ${c.now()})
            ON CONFLICT (name) DO UPDATE SET description = excluded.description, input_schema_json = excluded.input_schema_json,
              total_steps = excluded.total_steps, version = excluded.version, events_json = excluded.events_json,
              limits_json = excluded.limits_json,
              published_by = excluded.published_by,
              updated_at = excluded.updated_at`,
              'waybill_workflow_publish',
              client,
            );
          }
          await c.once(
            sql`UPDATE ${workers} SET workflows_json = ${JSON.stringify(published.map((w) => w.name))}
          WHERE ${workers.id} = ${workerId}`,
            'waybill_workflow_served',
            client,
          );
        }),
      );
    },

    async listPublishedWorkflows(options) {
      const [rows, live] = await Promise.all([
        withRetry('listPublishedWorkflows', () =>
          c.orm
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
            .orderBy(asc(workflows.name)),
        ),
        c.query<{ id: string; workflowsJson: string }>(
          sql`SELECT ${workers.id}, ${workers.workflowsJson} AS "workflowsJson"
          FROM ${workers} WHERE ${workers.stoppedAt} IS NULL AND ${workers.heartbeatAt} >= ${c.now()} - ${options.liveWithinMs / 1000}::float8
            AND ${workers.workflowsJson} IS NOT NULL ORDER BY ${workers.id}`,
          'waybill_workflow_servers',
        ),
      ]);
      return withServers(rows, live.rows);
    },

    /** Safe to retry: the second finds the total set. */
    async setRunTotal(id, workerId, totalSteps) {
      await withRetry('setRunTotal', () =>
        c.orm
          .update(runs)
          .set({ totalSteps })
          .where(and(eq(runs.id, id), eq(runs.owner, workerId), isNull(runs.totalSteps))),
      );
    },
  };
}
