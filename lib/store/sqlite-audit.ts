/**
 * The operators' log on SQLite: one insert per action, read newest first by id (ids only grow, so the
 * primary key is the keyset).
 */
import { guard, SqliteBase } from './sqlite-base';
import type { AuditEntry, AuditQuery, AuditStore } from './types';

const COLUMNS = 'id, at, actor, role, action, target, run_id AS runId, detail';

export abstract class SqliteAudit extends SqliteBase implements AuditStore {
  async recordAudit(entry: Omit<AuditEntry, 'id' | 'at'>): Promise<AuditEntry> {
    const at = this.now();
    return guard(() => this.db.prepare<[unknown], AuditEntry>(`INSERT INTO audit (at, actor, role, action, target, run_id, detail)
      VALUES (@at, @actor, @role, @action, @target, @runId, @detail) RETURNING ${COLUMNS}`).get({ ...entry, at })!);
  }

  async listAudit(options: AuditQuery = {}): Promise<AuditEntry[]> {
    return guard(() => this.prepared<[unknown], AuditEntry>(`SELECT ${COLUMNS} FROM audit
      WHERE (@beforeId IS NULL OR id < @beforeId) AND (@runId IS NULL OR run_id = @runId)
        AND (@actor IS NULL OR actor = @actor) AND (@action IS NULL OR action = @action)
        AND (@since IS NULL OR at >= @since) AND (@until IS NULL OR at < @until)
      ORDER BY id DESC LIMIT @limit`).all({
      beforeId: options.beforeId ?? null, runId: options.runId ?? null, actor: options.actor ?? null,
      action: options.action ?? null, since: options.since ?? null, until: options.until ?? null, limit: options.limit ?? 100,
    }));
  }
}
