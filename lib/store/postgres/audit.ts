/**
 * The operators' log on PostgreSQL, mirroring sqlite/audit.ts; times from the database clock. recordAudit is
 * not retried after a lost reply: a duplicated audit line would misreport what an operator did, so a
 * connection loss surfaces instead.
 */
import { desc } from 'drizzle-orm';
import type { AuditStore } from '../contract';
import { audit } from '../schema/pg';
import { auditFilter } from '../shared/audit-filter';
import type { PgConnection } from './connection';
import { unwrapped, withRetry } from './retry';

export function postgresAudit(c: PgConnection): AuditStore {
  return {
    async recordAudit(entry) {
      const [row] = await unwrapped(() =>
        c.orm
          .insert(audit)
          .values({ ...entry, at: c.now() })
          .returning(),
      );
      return row!;
    },

    async listAudit(query = {}) {
      return withRetry('listAudit', () =>
        c.orm
          .select()
          .from(audit)
          .where(auditFilter(audit, query))
          .orderBy(desc(audit.id))
          .limit(query.limit ?? 100),
      );
    },
  };
}
