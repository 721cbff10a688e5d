/**
 * Published workflows on SQLite: free functions over the connection, called by SqliteRunStore. A worker's
 * publication is one transaction, so a reader never sees its workflows without its served list or the reverse.
 */
import type Database from 'better-sqlite3';
import type { PublishedWorkflow, WorkflowPublication } from './types';
import { withServers } from './workflow-servers';

type Row = Omit<PublishedWorkflow, 'servedBy'>;

const COLUMNS = `name, description, input_schema_json AS inputSchemaJson, total_steps AS totalSteps, version,
  published_by AS publishedBy, updated_at AS updatedAt`;

/** Runs inside the caller's BEGIN IMMEDIATE. */
export function publishSqlite(db: Database.Database, workerId: string, workflows: WorkflowPublication[], now: number): void {
  const upsert = db.prepare(`INSERT INTO workflows (name, description, input_schema_json, total_steps, version, published_by, updated_at)
    VALUES (@name, @description, @inputSchemaJson, @totalSteps, @version, @workerId, @now)
    ON CONFLICT (name) DO UPDATE SET description = excluded.description, input_schema_json = excluded.input_schema_json,
      total_steps = excluded.total_steps, version = excluded.version, published_by = excluded.published_by,
      updated_at = excluded.updated_at`);
  for (const w of workflows) upsert.run({ ...w, workerId, now });
  db.prepare('UPDATE workers SET workflows_json = ? WHERE id = ?').run(JSON.stringify(workflows.map((w) => w.name)), workerId);
}

export function listPublishedSqlite(db: Database.Database, liveSince: number): PublishedWorkflow[] {
  const rows = db.prepare<[], Row>(`SELECT ${COLUMNS} FROM workflows ORDER BY name`).all();
  const live = db.prepare<[number], { id: string; workflowsJson: string }>(`SELECT id, workflows_json AS workflowsJson
    FROM workers WHERE stopped_at IS NULL AND heartbeat_at >= ? AND workflows_json IS NOT NULL ORDER BY id`).all(liveSince);
  return withServers(rows, live);
}

export function setTotalSqlite(db: Database.Database, id: string, workerId: string, totalSteps: number): void {
  db.prepare('UPDATE runs SET total_steps = ? WHERE id = ? AND owner = ? AND total_steps IS NULL').run(totalSteps, id, workerId);
}
