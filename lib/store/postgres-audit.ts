/**
 * The operators' log on PostgreSQL, mirroring sqlite-audit.ts; times from the database clock.
 * recordAudit is not retried after a lost reply: a duplicated audit line would misreport what an operator did,
 * so a connection loss surfaces instead.
 */
import { PostgresBase } from './postgres-base';
import type { AuditEntry, AuditQuery, AuditStore } from './types';

// id is a bigint, which node-postgres hands back as a string: as a double it is the number AuditEntry says
// (exact up to 2^53), so a page's `next` cursor is the same JSON on both backends.
const COLUMNS = `id::float8 AS id, at, actor, role, action, target, run_id AS "runId", detail`;

export abstract class PostgresAudit extends PostgresBase implements AuditStore {
  async recordAudit(entry: Omit<AuditEntry, 'id' | 'at'>): Promise<AuditEntry> {
    const { rows } = await this.pool.query<AuditEntry>(`INSERT INTO audit (at, actor, role, action, target, run_id, detail)
      VALUES (extract(epoch from now())::float8 + $1::float8, $2, $3, $4, $5, $6, $7) RETURNING ${COLUMNS}`,
    [this.skew(), entry.actor, entry.role, entry.action, entry.target, entry.runId, entry.detail]);
    return rows[0]!;
  }

  async listAudit(options: AuditQuery = {}): Promise<AuditEntry[]> {
    const { rows } = await this.query<AuditEntry>(undefined, `SELECT ${COLUMNS} FROM audit
      WHERE ($1::bigint IS NULL OR id < $1) AND ($2::text IS NULL OR run_id = $2)
        AND ($3::text IS NULL OR actor = $3) AND ($4::text IS NULL OR action = $4)
        AND ($5::float8 IS NULL OR at >= $5) AND ($6::float8 IS NULL OR at < $6)
      ORDER BY id DESC LIMIT $7`, [options.beforeId ?? null, options.runId ?? null, options.actor ?? null, options.action ?? null,
      options.since ?? null, options.until ?? null, options.limit ?? 100]);
    return rows;
  }
}
