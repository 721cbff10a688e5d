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
      const read = () =>
        c.orm
          .select()
          .from(audit)
          .where(auditFilter(audit, query))
          .orderBy(desc(audit.id))
          .limit(query.limit ?? 100);
      // A run's lines (the run page's) are a fixed read; a time range's plan depends on how wide it is.
      const { runId, limit: _, ...rest } = query;
      const byRunOnly = runId !== undefined && Object.values(rest).every((v) => v === undefined);
      return byRunOnly ? c.readBuilt(read()) : withRetry('listAudit', read);
    },
  };
}
