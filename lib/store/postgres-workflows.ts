/**
 * Published workflows on PostgreSQL, with sqlite-workflows.ts's semantics. Times come from the database's
 * clock (plus the injected skew), as every lease and heartbeat does. Publishing is idempotent, so a retry
 * after a lost answer writes the same rows again.
 */
import type pg from 'pg';
import { now } from './postgres-sql';
import type { WorkflowPublication } from './types';

export async function publishPostgres(client: pg.PoolClient, workerId: string, workflows: WorkflowPublication[], skew: number): Promise<void> {
  for (const w of workflows) {
    await client.query({
      name: 'waybill_workflow_publish',
      text: `INSERT INTO workflows (name, description, input_schema_json, total_steps, version, published_by, updated_at)
        VALUES ($1, $2, $3, $4, $5, $6, ${now('$7')})
        ON CONFLICT (name) DO UPDATE SET description = excluded.description, input_schema_json = excluded.input_schema_json,
          total_steps = excluded.total_steps, version = excluded.version, published_by = excluded.published_by,
          updated_at = excluded.updated_at`,
      values: [w.name, w.description, w.inputSchemaJson, w.totalSteps, w.version, workerId, skew],
    });
  }
  await client.query({
    name: 'waybill_workflow_served',
    text: 'UPDATE workers SET workflows_json = $1 WHERE id = $2',
    values: [JSON.stringify(workflows.map((w) => w.name)), workerId],
  });
}

export const LIST_PUBLISHED_SQL = `SELECT name, description, input_schema_json AS "inputSchemaJson", total_steps AS "totalSteps",
  version, published_by AS "publishedBy", updated_at AS "updatedAt" FROM workflows ORDER BY name`;

/** $1 seconds a heartbeat stays fresh, $2 skew. */
export const LIVE_SERVERS_SQL = `SELECT id, workflows_json AS "workflowsJson" FROM workers
  WHERE stopped_at IS NULL AND heartbeat_at >= ${now('$2')} - $1::float8 AND workflows_json IS NOT NULL ORDER BY id`;

/** $1 total, $2 run, $3 worker. Safe to retry: the second finds the total set. */
export const SET_TOTAL_SQL = 'UPDATE runs SET total_steps = $1 WHERE id = $2 AND owner = $3 AND total_steps IS NULL';
