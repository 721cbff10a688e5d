import 'server-only';
/**
 * The checks every page, server action and route handler makes for itself. Each entry point calls one of
 * these first; none relies on another having checked (a page's check does not cover its actions, and the
 * proxy/middleware is not a check).
 */
import { cookies, headers } from 'next/headers';
import { forbidden, redirect, unauthorized } from 'next/navigation';
import { config } from '../config';
import { crossSiteReason, hostReason, requestFacts } from './origin';
import { allows, authEnabled, LOCAL, type Principal, type Role, refusalStatus, roleForToken } from './principal';
import { isRunToken, readRunToken } from './run-token';
import { readSession, SESSION_COOKIE } from './session';

export type Refusal = { status: 401 | 403; message: string };

/**
 * Who sent these headers: a run token, else the session cookie, else a bearer token; `local` when no tokens
 * are configured. A run token is judged first and even without tokens configured: the program it was given
 * to is held to its run either way (one that drops it is `local`, which answers on loopback only).
 */
export function principalOf(h: Headers, cookie: string | undefined, channel: 'dashboard' | 'api'): Principal | null {
  const cfg = config();
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(h.get('authorization') ?? '')?.[1];
  if (bearer && isRunToken(bearer)) {
    const read = readRunToken(cfg, bearer, Date.now());
    return read.ok ? { role: 'run', actor: `run token (${read.claims.runId})`, runId: read.claims.runId } : null;
  }
  if (!authEnabled(cfg)) return LOCAL;
  const session = readSession(cfg, cookie, Date.now());
  if (session) return session;
  const role = bearer ? roleForToken(cfg, bearer) : null;
  return role ? { role, actor: `${role} token (${channel})` } : null;
}

/**
 * Why the request with these headers may not do what `need` allows, or null with who it is.
 * `mutation` adds the cross-site check; without tokens every request must name a loopback Host. `run`: the
 * route is a checkpoint protocol call and admits a run token — for that run, or for any (`'any'`) when the
 * run is named in the body, which the route then checks (lib/api/run-scope.ts).
 */
export function judge(
  h: Headers,
  cookie: string | undefined,
  need: Role,
  options: { mutation: boolean; channel: 'dashboard' | 'api'; run?: string },
): { who: Principal; refusal: null } | { who: Principal | null; refusal: Refusal } {
  const cfg = config();
  const facts = requestFacts(h);
  if (!authEnabled(cfg)) {
    const reason = hostReason(facts);
    if (reason) return { who: null, refusal: { status: 403, message: reason } };
  }
  if (options.mutation) {
    const reason = crossSiteReason(facts, cfg.WAYBILL_PUBLIC_ORIGIN);
    if (reason) return { who: null, refusal: { status: 403, message: reason } };
  }
  const who = principalOf(h, cookie, options.channel);
  if (!who) {
    const bearer = /^Bearer\s+(\S+)\s*$/i.exec(h.get('authorization') ?? '')?.[1];
    const runToken = bearer && isRunToken(bearer) ? readRunToken(cfg, bearer, Date.now()) : null;
    if (runToken && !runToken.ok) return { who, refusal: { status: 401, message: runToken.reason } };
    return {
      who,
      refusal: { status: 401, message: 'sign in required: send Authorization: Bearer <token>, or sign in at /login' },
    };
  }
  if (who.role === 'run') {
    if (options.run !== undefined && (options.run === 'any' || options.run === who.runId))
      return { who, refusal: null };
    const message =
      options.run === undefined
        ? `a run token (for run ${who.runId}) may use only the checkpoint protocol of its own run`
        : `a run token for run ${who.runId} may not touch run ${options.run}`;
    return { who, refusal: { status: 403, message } };
  }
  if (!allows(who, need))
    return {
      who,
      refusal: { status: refusalStatus(who), message: `the ${who.role} role may not do this: it needs ${need}` },
    };
  return { who, refusal: null };
}

/** Route handlers: the principal, or the refusal to send back as JSON. Reads only the request itself. */
export async function authorizeRequest(request: Request, need: Role, options: { mutation: boolean; run?: string }) {
  return judge(request.headers, cookieValue(request.headers.get('cookie'), SESSION_COOKIE), need, {
    ...options,
    channel: 'api',
  });
}

function cookieValue(header: string | null, name: string): string | undefined {
  for (const part of header?.split(';') ?? []) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** Server actions: the operator (or viewer, for reads) making this call; otherwise a 401 or 403 response. */
export async function requireAction(need: Role = 'operator'): Promise<Principal> {
  const [h, store] = await Promise.all([headers(), cookies()]);
  const verdict = judge(h, store.get(SESSION_COOKIE)?.value, need, { mutation: true, channel: 'dashboard' });
  if (!verdict.refusal) return verdict.who;
  if (verdict.refusal.status === 401) unauthorized();
  forbidden();
}

/**
 * Who is looking, for the header and for hiding controls a role may not use; null when nobody is signed in.
 * Not a check: pages and actions call requirePage / requireAction, which also judge Host and origin.
 */
export async function currentPrincipal(): Promise<Principal | null> {
  const [h, store] = await Promise.all([headers(), cookies()]);
  return principalOf(h, store.get(SESSION_COOKIE)?.value, 'dashboard');
}

/** Why a state-changing request with these headers is refused as cross-site, or null. For actions that need no role (sign-in). */
export function crossSiteRefusal(h: Headers): string | null {
  return crossSiteReason(requestFacts(h), config().WAYBILL_PUBLIC_ORIGIN);
}

/** Whether the browser reached us over https (directly, through a proxy, or as configured): the cookie is then Secure. */
export function reachedOverHttps(h: Headers): boolean {
  return (
    h.get('x-forwarded-proto')?.split(',')[0]?.trim() === 'https' ||
    config().WAYBILL_PUBLIC_ORIGIN?.startsWith('https:') === true
  );
}

/** Pages: the viewer (or better) reading; nobody signed in goes to /login and comes back to `path`. */
export async function requirePage(path: string, need: Role = 'viewer'): Promise<Principal> {
  const [h, store] = await Promise.all([headers(), cookies()]);
  const verdict = judge(h, store.get(SESSION_COOKIE)?.value, need, { mutation: false, channel: 'dashboard' });
  if (!verdict.refusal) return verdict.who;
  if (verdict.refusal.status === 401) redirect(`/login?next=${encodeURIComponent(path)}`);
  forbidden();
}
