/**
 * The dashboard's session cookie: `payload.signature`, the payload a base64url JSON of role, display name and
 * expiry, the signature an HMAC-SHA256 keyed from the configured tokens (and WAYBILL_SESSION_SECRET when set).
 * Nothing is stored server-side; changing or removing a token changes the key, which signs every session out.
 */
import { z } from 'zod';
import type { AuthConfig, Principal, Role } from './principal';
import { sign, verify } from './signed';

const PURPOSE = 'waybill-session-v1';

export const SESSION_COOKIE = 'waybill_session';

const payloadSchema = z.object({
  r: z.enum(['viewer', 'operator']),
  n: z.string().max(64),
  e: z.number().int().positive(),
});

/** A signed cookie value for `role`, valid WAYBILL_SESSION_HOURS from nowMs. */
export function signSession(
  cfg: AuthConfig,
  session: { role: Role; name: string },
  nowMs: number,
): { value: string; expires: Date } {
  const expiresS = Math.floor(nowMs / 1000 + cfg.WAYBILL_SESSION_HOURS * 3600);
  return {
    value: sign(cfg, PURPOSE, { r: session.role, n: session.name, e: expiresS }),
    expires: new Date(expiresS * 1000),
  };
}

/** The principal a cookie value stands for, or null when it is malformed, forged, expired or for a removed role. */
export function readSession(cfg: AuthConfig, value: string | undefined, nowMs: number): Principal | null {
  if (!value) return null;
  const parsed = verify(cfg, PURPOSE, value, payloadSchema);
  if (!parsed) return null;
  if (parsed.e * 1000 <= nowMs) return null;
  // A role whose token was removed since signing: the key changed too, but say it plainly.
  if (parsed.r === 'operator' ? !cfg.WAYBILL_OPERATOR_TOKEN : !cfg.WAYBILL_VIEWER_TOKEN) return null;
  return parsed.n
    ? { role: parsed.r, actor: `${parsed.n} (${parsed.r})`, name: parsed.n }
    : { role: parsed.r, actor: parsed.r };
}
