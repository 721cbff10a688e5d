/**
 * Signed values: a JSON payload, base64url, then its HMAC — the session cookie and run tokens both. The key is
 * derived from the session secret and both role tokens, with a purpose string for domain separation (a session
 * cannot be replayed as a run token), so rotating any of them revokes every value signed before.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { z } from 'zod';
import type { AuthConfig } from './principal';

export type Purpose = 'waybill-session-v1' | 'waybill-run-token-v1';

/** `<payload>.<mac>`, payload being the value as base64url JSON. */
export function sign(cfg: AuthConfig, purpose: Purpose, value: unknown): string {
  const payload = Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${payload}.${mac(cfg, purpose, payload)}`;
}

/** The value `text` was signed with, checked against `schema`; null when malformed, forged or re-keyed. */
export function verify<S extends z.ZodType>(
  cfg: AuthConfig,
  purpose: Purpose,
  text: string,
  schema: S,
): z.output<S> | null {
  if (text.length > 1024) return null;
  const dot = text.indexOf('.');
  if (dot <= 0) return null;
  const payload = text.slice(0, dot);
  const given = Buffer.from(text.slice(dot + 1), 'base64url');
  const expected = Buffer.from(mac(cfg, purpose, payload), 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  try {
    const checked = schema.safeParse(JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')));
    return checked.success ? checked.data : null;
  } catch {
    return null;
  }
}

function mac(cfg: AuthConfig, purpose: Purpose, payload: string): string {
  const key = createHash('sha256')
    .update(
      [
        purpose,
        cfg.WAYBILL_SESSION_SECRET ?? '',
        cfg.WAYBILL_OPERATOR_TOKEN ?? '',
        cfg.WAYBILL_VIEWER_TOKEN ?? '',
      ].join('\0'),
    )
    .digest();
  return createHmac('sha256', key).update(payload).digest('base64url');
}
