/**
 * How a delivery is signed, and how its receiver checks it: Stripe's scheme, under our header's name.
 *
 *   Waybill-Signature: t=<epoch seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>" under the webhook's secret>
 *
 * The timestamp is inside what is signed, so a captured delivery replayed later fails the tolerance; the body is
 * the exact bytes posted, so a receiver verifies before it parses. Several v1 entries may appear (a secret being
 * rotated); any one matching is enough. Only node:crypto: a receiver imports this alone.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_HEADER = 'Waybill-Signature';
export const DELIVERY_HEADER = 'Waybill-Delivery';
export const EVENT_HEADER = 'Waybill-Event';

/** The header's value for `body` signed with `secret` at `at` (epoch seconds). */
export function signWebhook(secret: string, body: string, at: number): string {
  const t = Math.floor(at);
  return `t=${t},v1=${hmac(secret, t, body)}`;
}

export interface VerifyOptions {
  /** How old (or how far ahead) the timestamp may be, in seconds: 300 by default, as Stripe's. */
  toleranceSec?: number;
  /** Epoch milliseconds to judge the timestamp by; Date.now() by default. */
  now?: number;
}

/**
 * Whether `header` (the Waybill-Signature value) signs `body` (the raw bytes received, as text) with `secret`,
 * within the tolerance. Compared in constant time; a malformed header is false, never a throw.
 */
export function verifyWebhook(
  secret: string,
  header: string | null | undefined,
  body: string,
  options: VerifyOptions = {},
): boolean {
  if (!header) return false;
  const parts = header.split(',').map((p) => p.trim().split('='));
  const t = Number(parts.find(([k]) => k === 't')?.[1]);
  if (!Number.isInteger(t)) return false;
  const now = (options.now ?? Date.now()) / 1000;
  if (Math.abs(now - t) > (options.toleranceSec ?? 300)) return false;
  const expected = Buffer.from(hmac(secret, t, body), 'hex');
  return parts.some(([k, v]) => {
    if (k !== 'v1' || !v || !/^[0-9a-f]{64}$/.test(v)) return false;
    return timingSafeEqual(expected, Buffer.from(v, 'hex'));
  });
}

function hmac(secret: string, t: number, body: string): string {
  return createHmac('sha256', secret).update(`${t}.${body}`).digest('hex');
}
