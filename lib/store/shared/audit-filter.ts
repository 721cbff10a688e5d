/**
 * The audit log's filters, once for both dialects: the two schemas' `audit` tables have the same columns, and
 * Drizzle's operators build each dialect's SQL from them.
 */
import { and, eq, gte, lt, type SQL } from 'drizzle-orm';
import type { AuditQuery } from '../contract';
import type { audit as pgAudit } from '../schema/pg';
import type { audit as sqliteAudit } from '../schema/sqlite';

/** Exact match on actor and action, `since <= at < until` (epoch seconds), and the keyset cursor. */
export function auditFilter(table: typeof sqliteAudit | typeof pgAudit, query: AuditQuery): SQL | undefined {
  return and(
    query.beforeId === undefined ? undefined : lt(table.id, query.beforeId),
    query.runId === undefined ? undefined : eq(table.runId, query.runId),
    query.actor === undefined ? undefined : eq(table.actor, query.actor),
    query.action === undefined ? undefined : eq(table.action, query.action),
    query.since === undefined ? undefined : gte(table.at, query.since),
    query.until === undefined ? undefined : lt(table.at, query.until),
  );
}
