/**
 * The operators' log on SQLite: one insert per action, read newest first by id (ids only grow, so the
 * primary key is the keyset).
 */
import { desc } from 'drizzle-orm';
import type { AuditStore } from '../contract';
import { audit } from '../schema/sqlite';
import { auditFilter } from '../shared/audit-filter';
import { guard, type SqliteConnection } from './connection';

export function sqliteAudit(c: SqliteConnection): AuditStore {
  const { orm } = c;
  return {
    async recordAudit(entry) {
      const at = c.now();
      return guard(() =>
        orm
          .insert(audit)
          .values({ ...entry, at })
          .returning()
          .get(),
      );
    },

    async listAudit(query = {}) {
      return guard(() =>
        orm
          .select()
          .from(audit)
          .where(auditFilter(audit, query))
          .orderBy(desc(audit.id))
          .limit(query.limit ?? 100)
          .all(),
      );
    },
  };
}
