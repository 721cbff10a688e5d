/**
 * Who is asking, as every operator operation sees it: the dashboard, the HTTP API and the CLI each build one
 * of these at their edge (a session or token there, `--as` or the OS user here) and lib/control decides.
 * The decision is made here, once, so the three ways in cannot disagree about what a viewer may do.
 */
import { allows } from '../auth/principal';
import { ForbiddenError } from '../errors';

export type Role = 'viewer' | 'operator' | 'local';
/** Where a call came from; `library`: a program's own emit (lib/engine/emit.ts), which holds the store. */
export type Channel = 'dashboard' | 'api' | 'cli' | 'library';

export interface Caller {
  /** Shown in the audit log: "alice (operator)", "operator token (api)", "cli:ann", "local". */
  actor: string;
  /** `local`: no tokens are configured (loopback only), or the CLI, which holds the store itself. */
  role: Role;
  channel: Channel;
}

/** What an operation needs: reading the log is a viewer's right, everything that changes state an operator's. */
export type Need = 'viewer' | 'operator';

/** lib/auth's one rule for what a role may do, which pages and route handlers use to hide or refuse too. */
export function allowed(caller: Caller, need: Need): boolean {
  return allows(caller, need);
}

/** Refuses before anything is parsed or opened: a viewer learns nothing from a refused action. */
export function authorize(caller: Caller, need: Need): void {
  if (!allowed(caller, need)) throw new ForbiddenError(caller.role, need);
}

/** How the caller's channel says "force it": the API's body field, the CLI's flag, the dashboard's checkbox. */
export function forceHint(caller: Caller): string {
  return caller.channel === 'api' ? 'send "force": true' : caller.channel === 'cli' ? '--force' : 'force';
}
