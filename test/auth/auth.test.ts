/**
 * The pure parts of sign-in: which token grants which role, session cookies that cannot be forged, replayed
 * past expiry or outlive their token, and the cross-site and loopback-Host rules.
 */
import { describe, expect, it } from 'vitest';
import { crossSiteReason, hostReason, type RequestFacts } from '../../lib/auth/origin';
import { type AuthConfig, allows, roleForToken } from '../../lib/auth/principal';
import { readSession, signSession } from '../../lib/auth/session';
import { parseConfig } from '../../lib/config';

const OP = 'operator-token-0123456789';
const VIEW = 'viewer-token-0123456789ab';
const cfg: AuthConfig = {
  WAYBILL_OPERATOR_TOKEN: OP,
  WAYBILL_VIEWER_TOKEN: VIEW,
  WAYBILL_SESSION_SECRET: undefined,
  WAYBILL_SESSION_HOURS: 12,
};
const NOW = 1_800_000_000_000;

describe('tokens and roles', () => {
  it('maps each token to its role and nothing else to anything', () => {
    expect(roleForToken(cfg, OP)).toBe('operator');
    expect(roleForToken(cfg, VIEW)).toBe('viewer');
    for (const wrong of ['', OP.slice(0, -1), `${OP}x`, OP.toUpperCase(), ` ${OP}`])
      expect(roleForToken(cfg, wrong)).toBeNull();
    expect(roleForToken({ ...cfg, WAYBILL_VIEWER_TOKEN: undefined }, VIEW)).toBeNull();
  });

  it('lets a viewer read only, an operator and a local user do everything', () => {
    expect(allows({ role: 'viewer', actor: 'v' }, 'viewer')).toBe(true);
    expect(allows({ role: 'viewer', actor: 'v' }, 'operator')).toBe(false);
    expect(allows({ role: 'operator', actor: 'o' }, 'operator')).toBe(true);
    expect(allows({ role: 'local', actor: 'local' }, 'operator')).toBe(true);
  });

  it('refuses weak or identical tokens in the environment, naming the variable', () => {
    expect(() => parseConfig({ WAYBILL_OPERATOR_TOKEN: 'short' })).toThrow(
      /WAYBILL_OPERATOR_TOKEN: must be at least 16 characters/,
    );
    expect(() => parseConfig({ WAYBILL_OPERATOR_TOKEN: OP, WAYBILL_VIEWER_TOKEN: OP })).toThrow(
      /WAYBILL_VIEWER_TOKEN: must differ/,
    );
    expect(() => parseConfig({ WAYBILL_VIEWER_TOKEN: 'has a space in it, long enough' })).toThrow(
      /WAYBILL_VIEWER_TOKEN: must be printable ASCII/,
    );
    expect(parseConfig({ WAYBILL_OPERATOR_TOKEN: OP }).WAYBILL_OPERATOR_TOKEN).toBe(OP);
  });
});

describe('session cookies', () => {
  it('round-trips role and name until expiry, and not a second after', () => {
    const { value, expires } = signSession(cfg, { role: 'operator', name: 'alice' }, NOW);
    expect(expires.getTime()).toBe(NOW + 12 * 3600 * 1000);
    expect(readSession(cfg, value, NOW)).toEqual({ role: 'operator', actor: 'alice (operator)', name: 'alice' });
    expect(readSession(cfg, value, expires.getTime() - 1000)).not.toBeNull();
    expect(readSession(cfg, value, expires.getTime())).toBeNull();
  });

  it('rejects a tampered payload, a foreign signature and garbage', () => {
    const viewer = signSession(cfg, { role: 'viewer', name: '' }, NOW).value;
    const [payload, signature] = viewer.split('.') as [string, string];
    const forged = Buffer.from(JSON.stringify({ r: 'operator', n: '', e: 9_999_999_999 })).toString('base64url');
    expect(readSession(cfg, `${forged}.${signature}`, NOW)).toBeNull();
    const otherKey = signSession(
      { ...cfg, WAYBILL_SESSION_SECRET: 'another-secret-value' },
      { role: 'viewer', name: '' },
      NOW,
    ).value;
    expect(readSession(cfg, otherKey, NOW)).toBeNull();
    for (const junk of [undefined, '', '.', `${payload}.`, `.${signature}`, 'a.b.c', 'x'.repeat(5000)])
      expect(readSession(cfg, junk, NOW)).toBeNull();
    expect(readSession(cfg, viewer, NOW)).toEqual({ role: 'viewer', actor: 'viewer' });
  });

  it('signs everyone out when a token changes or its role is removed', () => {
    const { value } = signSession(cfg, { role: 'viewer', name: 'bob' }, NOW);
    expect(readSession({ ...cfg, WAYBILL_OPERATOR_TOKEN: `${OP}-rotated` }, value, NOW)).toBeNull();
    expect(readSession({ ...cfg, WAYBILL_VIEWER_TOKEN: undefined }, value, NOW)).toBeNull();
  });
});

describe('cross-site and loopback rules', () => {
  const facts = (f: Partial<RequestFacts>): RequestFacts => ({
    host: '127.0.0.1:3000',
    origin: null,
    secFetchSite: null,
    forwardedProto: null,
    ...f,
  });

  it('accepts same-origin browser requests and non-browser clients, refuses the rest', () => {
    expect(
      crossSiteReason(facts({ origin: 'http://127.0.0.1:3000', secFetchSite: 'same-origin' }), undefined),
    ).toBeNull();
    expect(crossSiteReason(facts({}), undefined)).toBeNull();
    expect(crossSiteReason(facts({ origin: 'http://evil.example' }), undefined)).toMatch(
      /Origin http:\/\/evil.example is not http:\/\/127.0.0.1:3000/,
    );
    expect(crossSiteReason(facts({ origin: 'null' }), undefined)).toMatch(/Origin: null/);
    expect(crossSiteReason(facts({ secFetchSite: 'cross-site' }), undefined)).toMatch(/Sec-Fetch-Site: cross-site/);
    expect(crossSiteReason(facts({ secFetchSite: 'same-site', origin: 'http://127.0.0.1:3000' }), undefined)).toMatch(
      /same-site/,
    );
    expect(crossSiteReason(facts({ origin: 'http://127.0.0.1:3001' }), undefined)).not.toBeNull();
  });

  it('judges by the public origin behind a proxy', () => {
    const behindProxy = facts({ host: 'internal:3000', origin: 'https://waybill.example.com' });
    expect(crossSiteReason(behindProxy, 'https://waybill.example.com')).toBeNull();
    expect(crossSiteReason(behindProxy, undefined)).not.toBeNull();
    expect(
      crossSiteReason(facts({ host: 'w.example', origin: 'https://w.example', forwardedProto: 'https' }), undefined),
    ).toBeNull();
  });

  it('without tokens answers loopback Host names only (DNS rebinding)', () => {
    for (const host of ['127.0.0.1:3000', 'localhost:3000', '[::1]:3000', 'localhost', '127.0.0.2'])
      expect(hostReason(facts({ host }))).toBeNull();
    for (const host of ['evil.example:3000', '10.0.0.5:3000', 'localhost.evil.example', null])
      expect(hostReason(facts({ host }))).not.toBeNull();
  });
});
