/**
 * The dashboard's session cookie: `payload.signature`, the payload a base64url JSON of role, display name and
 * expiry, the signature an HMAC-SHA256 keyed from the configured tokens (and WAYBILL_SESSION_SECRET when set).
 * Nothing is stored server-side; changing or removing a token changes the key, which signs every session out.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import type { AuthConfig, Principal, Role } from './principal';

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
  const payload = Buffer.from(JSON.stringify({ r: session.role, n: session.name, e: expiresS })).toString('base64url');
  return { value: `${payload}.${mac(cfg, payload)}`, expires: new Date(expiresS * 1000) };
}

/** The principal a cookie value stands for, or null when it is malformed, forged, expired or for a removed role. */
export function readSession(cfg: AuthConfig, value: string | undefined, nowMs: number): Principal | null {
  if (!value || value.length > 1024) return null;
  const dot = value.indexOf('.');
  if (dot <= 0) return null;
  const payload = value.slice(0, dot);
  const given = Buffer.from(value.slice(dot + 1), 'base64url');
  const expected = Buffer.from(mac(cfg, payload), 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  let parsed: z.infer<typeof payloadSchema>;
  try {
    const checked = payloadSchema.safeParse(JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')));
    if (!checked.success) return null;
    parsed = checked.data;
  } catch {
    return null;
  }
  if (parsed.e * 1000 <= nowMs) return null;
  // A role whose token was removed since signing: the key changed too, but say it plainly.
  if (parsed.r === 'operator' ? !cfg.WAYBILL_OPERATOR_TOKEN : !cfg.WAYBILL_VIEWER_TOKEN) return null;
  return parsed.n
    ? { role: parsed.r, actor: `${parsed.n} (${parsed.r})`, name: parsed.n }
    : { role: parsed.r, actor: parsed.r };
}

function mac(cfg: AuthConfig, payload: string): string {
  const key = createHash('sha256')
    .update(
      [
        'waybill-session-v1',
        cfg.WAYBILL_SESSION_SECRET ?? '',
        cfg.WAYBILL_OPERATOR_TOKEN ?? '',
        cfg.WAYBILL_VIEWER_TOKEN ?? '',
      ].join('\0'),
    )
    .digest();
  return createHmac('sha256', key).update(payload).digest('base64url');
}
