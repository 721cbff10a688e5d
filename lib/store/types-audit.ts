/** The operators' log: who did what from the dashboard, the HTTP API or the CLI. Re-exported by types.ts. */

export type AuditRole = 'viewer' | 'operator' | 'local';

export interface AuditEntry {
  id: number;
  /** Epoch seconds, by the store's clock. */
  at: number;
  /** Who: the signed-in name with its role, or the role and channel of a bare token. */
  actor: string;
  /** `local` when no tokens are configured and the control plane answers loopback only. */
  role: AuditRole;
  /** What: start, pause, resume, cancel, retry, expire, resolve, sweep. */
  action: string;
  /** On what: a run id, an idempotency key, or `*` for a sweep. */
  target: string;
  runId: string | null;
  detail: string | null;
}

/** The operators' log: every operator action (lib/control), whichever way it came, newest first. */
export interface AuditStore {
  recordAudit(entry: Omit<AuditEntry, 'id' | 'at'>): Promise<AuditEntry>;

  /**
   * Newest first by id; `beforeId` continues a page (keyset). The filters narrow by exact match (`runId`,
   * `actor`, `action`) and by time, `since <= at < until` in epoch seconds, so adjacent ranges never share a line.
   */
  listAudit(options?: AuditQuery): Promise<AuditEntry[]>;
}

export interface AuditQuery {
  limit?: number;
  beforeId?: number;
  runId?: string;
  actor?: string;
  action?: string;
  since?: number;
  until?: number;
}
