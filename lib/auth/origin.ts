/**
 * Is a request from our own pages? Browsers say where a request comes from in `Sec-Fetch-Site` and `Origin`;
 * a mutation carrying either must name our origin. A request with neither is not from a browser (curl, an
 * agent's HTTP client): it cannot ride a victim's cookie, and is judged by its bearer token alone.
 *
 * With no tokens configured, the Host header must also be a loopback name. Otherwise a page on evil.example
 * whose DNS name is re-pointed at 127.0.0.1 (DNS rebinding) would be "same origin" with itself and could read
 * and drive a dashboard that has no sign-in.
 */
export interface RequestFacts {
  /** The Host header (host[:port]). */
  host: string | null;
  origin: string | null;
  secFetchSite: string | null;
  /** x-forwarded-proto when a proxy sets it. */
  forwardedProto: string | null;
}

/** The facts as a request's headers state them. */
export function requestFacts(h: Headers): RequestFacts {
  return {
    host: h.get('host'),
    origin: h.get('origin'),
    secFetchSite: h.get('sec-fetch-site'),
    forwardedProto: h.get('x-forwarded-proto'),
  };
}

const LOOPBACK_HOST = /^(localhost|127(?:\.\d{1,3}){3}|\[::1\])(?::\d{1,5})?$/i;

/** The origin the server is reached at: the configured public origin, else the Host header's. */
export function selfOrigin(facts: RequestFacts, publicOrigin: string | undefined): string | null {
  if (publicOrigin) return publicOrigin;
  if (!facts.host) return null;
  const proto = facts.forwardedProto?.split(',')[0]?.trim() === 'https' ? 'https' : 'http';
  return `${proto}://${facts.host}`;
}

/** Why a state-changing request is refused as cross-site, or null when it may proceed. */
export function crossSiteReason(facts: RequestFacts, publicOrigin: string | undefined): string | null {
  const site = facts.secFetchSite?.toLowerCase() ?? null;
  if (site !== null && site !== 'same-origin') return `cross-site request refused (Sec-Fetch-Site: ${site})`;
  if (facts.origin === null) return null;
  if (facts.origin === 'null') return 'cross-site request refused (Origin: null)';
  const self = selfOrigin(facts, publicOrigin);
  if (!self || facts.origin.toLowerCase() !== self.toLowerCase())
    return `cross-site request refused (Origin ${facts.origin} is not ${self ?? 'this server'})`;
  return null;
}

/** Without tokens: why this request's Host is refused (not a loopback name), or null. */
export function hostReason(facts: RequestFacts): string | null {
  if (facts.host && LOOPBACK_HOST.test(facts.host)) return null;
  return `without WAYBILL_OPERATOR_TOKEN the dashboard answers only to localhost, 127.0.0.1 or [::1] (Host: ${facts.host ?? 'none'})`;
}
