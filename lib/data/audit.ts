import 'server-only';
/**
 * The operators' log, written by every mutation of the dashboard and the API after it has taken effect, and
 * read by the audit page. The action's own operator event (in the run's timeline) is written by the store in
 * the action's transaction; this line says who it was.
 */
import type { Principal } from '../auth/principal';
import type { AuditEntry } from '../store/types';
import { getStore } from './store';

export type AuditAction = 'start' | 'pause' | 'resume' | 'cancel' | 'retry' | 'expire' | 'resolve' | 'sweep';

export async function audit(who: Principal, entry: { action: AuditAction; target: string; runId?: string | null; detail?: string | null }): Promise<void> {
  const store = await getStore();
  await store.recordAudit({ actor: who.actor, role: who.role, action: entry.action, target: entry.target, runId: entry.runId ?? null, detail: entry.detail ?? null });
}

export async function listAudit(options: { limit?: number; beforeId?: number; runId?: string } = {}): Promise<AuditEntry[]> {
  return (await getStore()).listAudit(options);
}
