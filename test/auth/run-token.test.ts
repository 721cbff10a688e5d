/**
 * Run tokens as lib/auth signs and reads them: scoped to the run they name, expiring, and revoked by rotating
 * WAYBILL_SESSION_SECRET (or a token), and never interchangeable with a session cookie.
 */
import { describe, expect, it } from 'vitest';
import type { AuthConfig } from '../../lib/auth/principal';
import { mintRunToken, readRunToken, runTokenTtl, signRunToken } from '../../lib/auth/run-token';
import { readSession, signSession } from '../../lib/auth/session';

const cfg: AuthConfig = {
  WAYBILL_OPERATOR_TOKEN: 'operator-token-0123456789',
  WAYBILL_VIEWER_TOKEN: undefined,
  WAYBILL_SESSION_SECRET: 'secret-one-0123456789',
  WAYBILL_SESSION_HOURS: 12,
};
const NOW = 1_767_225_600_000;

describe('run tokens', () => {
  it('name their run and expiry, and read back only while unexpired', () => {
    const { token, expiresAt } = signRunToken(cfg, 'run-7', 3_600_000, NOW);
    expect(token.startsWith('wbrun1.')).toBe(true);
    expect(expiresAt).toBe(NOW / 1000 + 3600);
    expect(readRunToken(cfg, token, NOW)).toEqual({
      ok: true,
      claims: { runId: 'run-7', expiresAt, issuedAt: NOW / 1000 },
    });
    expect(readRunToken(cfg, token, NOW + 3_599_999)).toMatchObject({ ok: true });
    const late = readRunToken(cfg, token, NOW + 3_600_000);
    expect(late).toEqual({
      ok: false,
      reason:
        'the run token for run run-7 expired at 2026-01-01T01:00:00.000Z: mint another (waybill token --run run-7)',
    });
  });

  it('are revoked by rotating the session secret or the operator token', () => {
    const { token } = signRunToken(cfg, 'run-7', 3_600_000, NOW);
    expect(readRunToken({ ...cfg, WAYBILL_SESSION_SECRET: 'secret-two-0123456789' }, token, NOW)).toMatchObject({
      ok: false,
    });
    expect(readRunToken({ ...cfg, WAYBILL_OPERATOR_TOKEN: 'operator-token-rotated-0123' }, token, NOW)).toMatchObject({
      ok: false,
    });
    expect(readRunToken(cfg, token, NOW)).toMatchObject({ ok: true });
  });

  it('cannot be edited to another run, and are not session cookies (nor the other way round)', () => {
    const { token } = signRunToken(cfg, 'run-7', 3_600_000, NOW);
    const [, payload, sig] = /^wbrun1\.([^.]+)\.(.+)$/.exec(token)!;
    const other = Buffer.from(Buffer.from(payload!, 'base64url').toString().replace('run-7', 'run-8')).toString(
      'base64url',
    );
    expect(readRunToken(cfg, `wbrun1.${other}.${sig}`, NOW)).toMatchObject({ ok: false });
    expect(readSession(cfg, token.slice('wbrun1.'.length), NOW)).toBeNull();
    const session = signSession(cfg, { role: 'operator', name: 'olga' }, NOW).value;
    expect(readRunToken(cfg, `wbrun1.${session}`, NOW)).toMatchObject({ ok: false });
    for (const junk of ['wbrun1.', 'wbrun1.x', 'wbrun1..', `wbrun1.${'a'.repeat(2000)}.b`])
      expect(readRunToken(cfg, junk, NOW).ok).toBe(false);
  });

  it('live 24h by default, at most 30 days', () => {
    expect(mintRunToken(cfg, 'r', undefined, NOW).expiresAt).toBe(NOW / 1000 + 86_400);
    expect(runTokenTtl.safeParse('30d')).toMatchObject({ success: true, data: 30 * 86_400_000 });
    expect(runTokenTtl.safeParse('31d').success).toBe(false);
    expect(runTokenTtl.safeParse('24').success).toBe(false);
    expect(() => signRunToken(cfg, 'r', 0, NOW)).toThrow(RangeError);
  });
});
