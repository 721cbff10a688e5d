/**
 * Who is calling the gateway, from its Authorization header alone (a sandbox's SDK sends nothing else): a run
 * token is that run, held to its keys; the operator token may use any key. A viewer may not spend money.
 * With no tokens configured everyone is `local`, and the gateway listens on loopback only (server.ts), as
 * the dashboard that also serves it does. A page in a browser is refused as the dashboard refuses it
 * (lib/auth/origin.ts): another site's page, or, without tokens, a page that reached loopback under its own
 * DNS name, would otherwise spend the provider's key with no token at all.
 */
import { crossSiteReason, hostReason, requestFacts } from '../auth/origin';
import { type AuthConfig, authEnabled, LOCAL, type Principal, roleForToken } from '../auth/principal';
import { isRunToken, readRunToken } from '../auth/run-token';
import type { Config } from '../config';
import { ApiError } from '../errors';

export type GatewayAuth = AuthConfig & Pick<Config, 'WAYBILL_PUBLIC_ORIGIN'>;

export function gatewayPrincipal(cfg: GatewayAuth, headers: Headers, nowMs: number): Principal {
  const facts = requestFacts(headers);
  const browser = crossSiteReason(facts, cfg.WAYBILL_PUBLIC_ORIGIN) ?? (authEnabled(cfg) ? null : hostReason(facts));
  if (browser) throw new ApiError('FORBIDDEN', `${browser}; nothing was sent`);
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(headers.get('authorization') ?? '')?.[1];
  if (bearer && isRunToken(bearer)) {
    const read = readRunToken(cfg, bearer, nowMs);
    if (!read.ok) throw new ApiError('UNAUTHENTICATED', read.reason);
    return { role: 'run', actor: `run token (${read.claims.runId})`, runId: read.claims.runId };
  }
  if (!authEnabled(cfg)) return LOCAL;
  const role = bearer ? roleForToken(cfg, bearer) : null;
  if (role === null)
    throw new ApiError('UNAUTHENTICATED', 'send Authorization: Bearer <run token or operator token> (the SDK api key)');
  if (role !== 'operator') throw new ApiError('FORBIDDEN', 'the viewer role may not make model calls');
  return { role, actor: 'operator token (gateway)' };
}
