/**
 * The operators' log on SQLite: one insert per action, read newest first by id (ids only grow, so the
 * primary key is the keyset).
 */
import { guard, SqliteBase } from './sqlite-base';
import type { AuditEntry, AuditStore } from './types';

const COLUMNS = 'id, at, actor, role, action, target, run_id AS runId, detail';

export abstract class SqliteAudit extends SqliteBase implements AuditStore {
  async recordAudit(entry: Omit<AuditEntry, 'id' | 'at'>): Promise<AuditEntry> {
    const at = this.now();
    return guard(() => this.db.prepare<[unknown], AuditEntry>(`INSERT INTO audit (at, actor, role, action, target, run_id, detail)
      VALUES (@at, @actor, @role, @action, @target, @runId, @detail) RETURNING ${COLUMNS}`).get({ ...entry, at })!);
  }

  async listAudit(options: { limit?: number; beforeId?: number; runId?: string } = {}): Promise<AuditEntry[]> {
    return guard(() => this.prepared<[unknown], AuditEntry>(`SELECT ${COLUMNS} FROM audit
      WHERE (@beforeId IS NULL OR id < @beforeId) AND (@runId IS NULL OR run_id = @runId)
      ORDER BY id DESC LIMIT @limit`).all({
      beforeId: options.beforeId ?? null, runId: options.runId ?? null, limit: options.limit ?? 100,
    }));
  }
}
