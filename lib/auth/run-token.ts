/**
 * Run-scoped tokens: what a sandboxed agent gets instead of the operator token. A run token may use the
 * checkpoint protocol for its one run (claim, renew, commit, release, progress, begin, end, read the run's
 * committed results) and nothing else; lib/auth/server.ts admits it only where a route says so, and lib/api's
 * run scope checks that every run and key the request names is that run's.
 *
 * `wbrun1.<payload>.<signature>`: the payload a base64url JSON of run id, expiry and issue time, the signature an
 * HMAC-SHA256 keyed like the session cookie's (WAYBILL_SESSION_SECRET and the configured tokens) under its own
 * label, so a session cookie is never a run token or the other way round. Nothing is stored: rotating the
 * secret (or a token) changes the key and revokes every run token at once; each also expires on its own.
 */
import { z } from 'zod';
import { durationSchema } from '../duration';
import type { AuthConfig } from './principal';
import { sign, verify } from './signed';

const PURPOSE = 'waybill-run-token-v1';

export const RUN_TOKEN_PREFIX = 'wbrun1.';
/** A day, as Stripe's restricted keys for one job are usually minted; at most 30 days. */
export const RUN_TOKEN_DEFAULT_TTL_MS = 24 * 3_600_000;
export const RUN_TOKEN_MAX_TTL_MS = 30 * 24 * 3_600_000;

const payloadSchema = z.strictObject({
  r: z.string().min(1).max(128),
  e: z.number().int().positive(),
  i: z.number().int().positive(),
});

export interface RunTokenClaims {
  runId: string;
  /** Epoch seconds. */
  expiresAt: number;
  issuedAt: number;
}

/** A token's lifetime as people write it (`24h`, `90m`, `7d`): at most 30 days. */
export const runTokenTtl = durationSchema.pipe(z.number().max(RUN_TOKEN_MAX_TTL_MS, 'must be at most 30d'));

/** The one answer shape for the API, the CLI and a worker: the token, its run, its expiry (epoch seconds). */
export function mintRunToken(cfg: AuthConfig, runId: string, ttlMs: number | undefined, nowMs: number) {
  const { token, expiresAt } = signRunToken(cfg, runId, ttlMs ?? RUN_TOKEN_DEFAULT_TTL_MS, nowMs);
  return { token, runId, expiresAt };
}

export function isRunToken(presented: string): boolean {
  return presented.startsWith(RUN_TOKEN_PREFIX);
}

/** A token for `runId`, valid `ttlMs` from nowMs. */
export function signRunToken(
  cfg: AuthConfig,
  runId: string,
  ttlMs: number,
  nowMs: number,
): { token: string; expiresAt: number } {
  if (!(ttlMs > 0 && ttlMs <= RUN_TOKEN_MAX_TTL_MS))
    throw new RangeError(`a run token lives more than 0 and at most 30 days, not ${ttlMs} ms`);
  const issuedAt = Math.floor(nowMs / 1000);
  const expiresAt = Math.floor((nowMs + ttlMs) / 1000);
  return { token: `${RUN_TOKEN_PREFIX}${sign(cfg, PURPOSE, { r: runId, e: expiresAt, i: issuedAt })}`, expiresAt };
}

/** What a presented run token grants, or why it grants nothing (forged, malformed, expired). */
export function readRunToken(
  cfg: AuthConfig,
  presented: string,
  nowMs: number,
): { ok: true; claims: RunTokenClaims } | { ok: false; reason: string } {
  const bad = {
    ok: false as const,
    reason: 'the run token is not valid here (malformed, forged, or signed with a secret since rotated)',
  };
  if (!isRunToken(presented) || presented.length > 1024) return bad;
  const parsed = verify(cfg, PURPOSE, presented.slice(RUN_TOKEN_PREFIX.length), payloadSchema);
  if (!parsed) return bad;
  if (parsed.e * 1000 <= nowMs) {
    return {
      ok: false,
      reason: `the run token for run ${parsed.r} expired at ${new Date(parsed.e * 1000).toISOString()}: mint another (waybill token --run ${parsed.r})`,
    };
  }
  return { ok: true, claims: { runId: parsed.r, expiresAt: parsed.e, issuedAt: parsed.i } };
}
