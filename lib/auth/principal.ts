/**
 * Who is asking, and what a role may do. Two roles from two tokens: a viewer reads, an operator reads and
 * mutates. With no token configured there is no sign-in at all and everyone who can reach the server is
 * `local` — which is why the server then answers on loopback only.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Config } from '../config';

export type Role = 'viewer' | 'operator';

export interface Principal {
  /**
   * `local`: no tokens are configured; allowed everything, reachable from this machine only. `run`: a run
   * token (lib/auth/run-token.ts), admitted only by the checkpoint protocol's routes, for `runId` alone.
   */
  role: Role | 'local' | 'run';
  /** Shown in the audit log: "alice (operator)", "operator token (api)", "local". */
  actor: string;
  /** The name given at sign-in, alone ("alice"), for the header, which shows the role beside it. */
  name?: string;
  /** The one run a `run` principal may touch. */
  runId?: string;
}

export type AuthConfig = Pick<
  Config,
  'WAYBILL_OPERATOR_TOKEN' | 'WAYBILL_VIEWER_TOKEN' | 'WAYBILL_SESSION_SECRET' | 'WAYBILL_SESSION_HOURS'
>;

export const LOCAL: Principal = { role: 'local', actor: 'local' };

/** Whether a listen address is this machine only: where a server with no tokens configured may listen. */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127(\.\d{1,3}){3}$/.test(host);
}

export function authEnabled(cfg: AuthConfig): boolean {
  return Boolean(cfg.WAYBILL_OPERATOR_TOKEN || cfg.WAYBILL_VIEWER_TOKEN);
}

/** Whether `who` may do what `need` allows. */
export function allows(who: Principal, need: Role): boolean {
  // A run token is neither role: only routes that admit it by name (judge's `run` option) let it in.
  if (who.role === 'run') return false;
  return who.role === 'local' || who.role === 'operator' || need === 'viewer';
}

/** The role a presented token grants, compared in constant time so timing does not leak how much matched. */
export function roleForToken(cfg: AuthConfig, presented: string): Role | null {
  const given = digest(presented);
  // Both comparisons always run, so the time taken does not tell a viewer token from an operator one.
  const operator =
    cfg.WAYBILL_OPERATOR_TOKEN !== undefined && timingSafeEqual(given, digest(cfg.WAYBILL_OPERATOR_TOKEN));
  const viewer = cfg.WAYBILL_VIEWER_TOKEN !== undefined && timingSafeEqual(given, digest(cfg.WAYBILL_VIEWER_TOKEN));
  return operator ? 'operator' : viewer ? 'viewer' : null;
}

/** The HTTP status for a refusal: 401 when nobody is signed in, 403 when the role is too weak. */
export function refusalStatus(who: Principal | null): 401 | 403 {
  return who ? 403 : 401;
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}
