import 'server-only';
/**
 * The operators' log, written by every mutation of the dashboard and the API after it has taken effect, and
 * read by the audit page. The action's own operator event (in the run's timeline) is written by the store in
 * the action's transaction; this line says who it was.
 */
import type { Principal } from '../auth/principal';
import type { AuditEntry } from '../store/types';
import { getStore } from './store';

export type AuditAction = 'start' | 'pause' | 'resume' | 'cancel' | 'retry' | 'expire' | 'resolve' | 'sweep' | 'token';

export async function audit(who: Principal, entry: { action: AuditAction; target: string; runId?: string | null; detail?: string | null }): Promise<void> {
  // Unreachable by construction (judge admits a run token only to protocol routes, which are not audited), and
  // the audit log has no role for it: refuse rather than write a line that misnames the caller.
  if (who.role === 'run') throw new Error(`a run token (${who.actor}) reached an audited action: ${entry.action}`);
  const store = await getStore();
  await store.recordAudit({ actor: who.actor, role: who.role, action: entry.action, target: entry.target, runId: entry.runId ?? null, detail: entry.detail ?? null });
}

export async function listAudit(options: { limit?: number; beforeId?: number; runId?: string } = {}): Promise<AuditEntry[]> {
  return (await getStore()).listAudit(options);
}
