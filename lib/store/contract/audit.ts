/** The operators' log: who did what from the dashboard, the HTTP API or the CLI. */
import type { AuditEntry } from './rows';

/**
 * A page of the log, newest first. Exact match on `actor` and `action`; `since <= at < until` in epoch
 * seconds; `beforeId` continues a page (keyset on id, which only grows).
 */
export interface AuditQuery {
  limit?: number;
  beforeId?: number;
  runId?: string;
  actor?: string;
  action?: string;
  since?: number;
  until?: number;
}

export interface AuditStore {
  /** `at` is the store's clock; `id` the log's own sequence. */
  recordAudit(entry: Omit<AuditEntry, 'id' | 'at'>): Promise<AuditEntry>;

  listAudit(query?: AuditQuery): Promise<AuditEntry[]>;
}
