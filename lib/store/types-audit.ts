/** The operators' log: who did what from the dashboard or the HTTP API. Re-exported by types.ts. */

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

/** The operators' log: every mutation made through the dashboard or the HTTP API, newest first. */
export interface AuditStore {
  recordAudit(entry: Omit<AuditEntry, 'id' | 'at'>): Promise<AuditEntry>;

  /** Newest first; `beforeId` continues a page (keyset), `runId` narrows to one run. */
  listAudit(options?: { limit?: number; beforeId?: number; runId?: string }): Promise<AuditEntry[]>;
}
