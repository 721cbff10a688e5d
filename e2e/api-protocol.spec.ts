/**
 * Issue 6, item 4: the checkpoint protocol over HTTP, with the in-process Checkpoint's outcomes and errors,
 * operators' claim actions audited (protocol calls are not), and the article's loop in Python against the
 * API: SIGKILLed after a side effect and before its commit, run again, every step committed exactly once.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { apiError, call, countWhere, OPERATOR, readSecured, SECURED, VIEWER } from './support/api';
import { E2E_OPERATOR_TOKEN } from './support/prepare';
import { expect, noChromium, test, uniqueId } from './support/test';

test.skip(noChromium, 'no chromium');

type Claim =
  | { outcome: 'claimed'; token: string; leaseExpiresAt: number; attempt: number; tookOver: boolean }
  | { outcome: 'committed'; result: unknown }
  | { outcome: 'held'; leaseExpiresAt: number; retryAfterMs: number };

// The shortest lease the dashboard grants on SQLite with its default 30 s WAYBILL_LEASE_MS: 1.5 × its 5 s wait for
// the write lock (lib/store/shared/sqlite-timeouts.ts). Short, so orphans show within seconds.
const SHORT_LEASE_MS = 7500;
test('claim → commit → claim again is committed; a second claimer is held; a wrong token commits nothing', async ({
  request,
}) => {
  const runId = uniqueId('e2e-proto');
  const key = `${runId}:step:0`;
  const auditBefore = countWhere('audit');
  const claim = async (body: object) =>
    (
      await call(request, 'POST', '/api/v1/checkpoint/claim', { headers: OPERATOR, body: { runId, key, ...body } })
    ).json() as Promise<Claim>;

  const first = await claim({ fingerprint: 'f1', step: 0, leaseMs: 60_000 });
  expect(first).toMatchObject({ outcome: 'claimed', attempt: 1, tookOver: false });
  if (first.outcome !== 'claimed') throw new Error('unreachable');
  const held = await claim({ fingerprint: 'f1' });
  expect(held).toMatchObject({ outcome: 'held', leaseExpiresAt: first.leaseExpiresAt, retryAfterMs: 1000 });

  for (const token of ['not-the-token', `${first.token}x`]) {
    const wrong = await call(request, 'POST', '/api/v1/checkpoint/commit', {
      headers: OPERATOR,
      body: { runId, key, token, result: 'forged' },
    });
    expect([wrong.status(), (await apiError(wrong)).code]).toEqual([409, 'LEASE_LOST']);
  }
  expect(countWhere('committed WHERE idem_key = ?', key)).toBe(0);

  const committed = await call(request, 'POST', '/api/v1/checkpoint/commit', {
    headers: OPERATOR,
    body: {
      runId,
      key,
      token: first.token,
      result: { answer: 42 },
      step: 0,
      fingerprint: 'f1',
      progress: { step: 1, state: { processed: 1 } },
    },
  });
  expect([committed.status(), await committed.json()]).toEqual([200, { key, committed: true, run: null }]);
  expect(await claim({ fingerprint: 'f1' })).toMatchObject({
    outcome: 'committed',
    result: { answer: 42 },
    source: 'executed',
    step: 0,
  });
  // The same token cannot commit twice either.
  const twice = await call(request, 'POST', '/api/v1/checkpoint/commit', {
    headers: OPERATOR,
    body: { runId, key, token: first.token, result: 'again' },
  });
  expect(twice.status()).toBe(409);

  const reuse = await call(request, 'POST', '/api/v1/checkpoint/claim', {
    headers: OPERATOR,
    body: { runId, key, fingerprint: 'f2' },
  });
  expect([reuse.status(), (await apiError(reuse)).code]).toEqual([422, 'IDEMPOTENCY_KEY_REUSE']);
  const reuseCommit = await call(request, 'POST', '/api/v1/checkpoint/commit', {
    headers: OPERATOR,
    body: { runId, key, token: 'stale', result: 1, fingerprint: 'f2' },
  });
  expect([reuseCommit.status(), (await apiError(reuseCommit)).code]).toEqual([422, 'IDEMPOTENCY_KEY_REUSE']);

  expect(
    readSecured((db) =>
      db.prepare('SELECT result_json AS r, fingerprint AS f FROM committed WHERE run_id = ?').all(runId),
    ),
  ).toEqual([{ r: '{"answer":42}', f: 'f1' }]);
  const progress = await (
    await call(request, 'GET', `/api/v1/checkpoint/${runId}/progress`, { headers: VIEWER })
  ).json();
  expect(progress).toMatchObject({
    runId,
    step: 1,
    state: { processed: 1 },
    counters: { executed: 1, skipped: 0, awaited: 0 },
  });
  const run = await (await call(request, 'GET', `/api/v1/runs/${runId}`, { headers: VIEWER })).json();
  expect(run).toMatchObject({
    run: { id: runId, workflow: 'external', status: 'idle', external: true },
    counts: { committed: 1, claims: 0 },
  });
  const list = await (await call(request, 'GET', `/api/v1/runs/${runId}/committed`, { headers: VIEWER })).json();
  expect(list).toMatchObject({
    committed: [{ key, step: 0, result: { answer: 42 }, source: 'executed' }],
    nextCursor: null,
  });
  expect(countWhere('audit') - auditBefore).toBe(0); // protocol calls are not operator actions
});

test('a slow holder is fenced: after its lease passes the key is taken over and its commit is refused', async ({
  request,
}) => {
  const runId = uniqueId('e2e-fence');
  const key = `${runId}:step:3`;
  const claim = async () =>
    (
      await call(request, 'POST', '/api/v1/checkpoint/claim', {
        headers: OPERATOR,
        body: { runId, key, leaseMs: SHORT_LEASE_MS },
      })
    ).json() as Promise<Claim>;
  const slow = await claim();
  if (slow.outcome !== 'claimed') throw new Error(`expected claimed, got ${slow.outcome}`);
  // Time passes (however long it takes); the claim shows as orphaned, then another client takes it over.
  await expect
    .poll(
      async () =>
        (await (await call(request, 'GET', `/api/v1/claims?runId=${runId}&orphaned=true`, { headers: VIEWER })).json())
          .claims.length,
      { timeout: 20_000 },
    )
    .toBe(1);
  const next = await claim();
  expect(next).toMatchObject({ outcome: 'claimed', attempt: 2, tookOver: true });
  if (next.outcome !== 'claimed') throw new Error('unreachable');

  const renew = await call(request, 'POST', '/api/v1/checkpoint/renew', {
    headers: OPERATOR,
    body: { key, token: slow.token },
  });
  expect([renew.status(), (await apiError(renew)).code]).toEqual([409, 'LEASE_LOST']);
  const stale = await call(request, 'POST', '/api/v1/checkpoint/commit', {
    headers: OPERATOR,
    body: { runId, key, token: slow.token, result: 'late' },
  });
  expect([stale.status(), (await apiError(stale)).code]).toEqual([409, 'LEASE_LOST']);
  expect(countWhere('committed WHERE idem_key = ?', key)).toBe(0);

  const renewed = await call(request, 'POST', '/api/v1/checkpoint/renew', {
    headers: OPERATOR,
    body: { key, token: next.token, leaseMs: 60_000 },
  });
  expect(await renewed.json()).toEqual({ key, renewed: true, leaseMs: 60_000 });
  const released = await call(request, 'POST', '/api/v1/checkpoint/release', {
    headers: OPERATOR,
    body: { key, token: next.token, error: 'model said 503' },
  });
  expect(await released.json()).toEqual({ key, released: true });
  expect(countWhere("step_events WHERE idem_key = ? AND outcome = 'failed'", key)).toBe(1);
  expect(countWhere('claims WHERE idem_key = ?', key)).toBe(0);
});

test('orphaned claims: expire, resolve and sweep over HTTP, each audited once', async ({ request }) => {
  const runId = uniqueId('e2e-orphans');
  const keys = [0, 1, 2, 3].map((i) => `${runId}:step:${i}`);
  for (const key of keys) {
    const claimed = await call(request, 'POST', '/api/v1/checkpoint/claim', {
      headers: OPERATOR,
      body: { runId, key, leaseMs: SHORT_LEASE_MS },
    });
    expect((await claimed.json()).outcome).toBe('claimed');
  }
  await expect
    .poll(
      async () =>
        (await (await call(request, 'GET', `/api/v1/claims?runId=${runId}&orphaned=true`, { headers: VIEWER })).json())
          .claims.length,
      { timeout: 20_000 },
    )
    .toBe(4);
  const auditBefore = countWhere('audit');

  const expired = await call(request, 'POST', '/api/v1/claims/expire', { headers: OPERATOR, body: { key: keys[0] } });
  expect(await expired.json()).toEqual({ key: keys[0], runId, expired: true });
  const resolved = await call(request, 'POST', '/api/v1/claims/resolve', {
    headers: OPERATOR,
    body: { key: keys[1], result: { sent: true }, note: 'provider confirms' },
  });
  expect(await resolved.json()).toEqual({ key: keys[1], runId, resolved: true });
  const swept = await call(request, 'POST', '/api/v1/claims/sweep', { headers: OPERATOR, body: { runId } });
  expect(await swept.json()).toEqual({ expired: 2, keys: [keys[2], keys[3]], skipped: [] });

  expect(
    readSecured((db) =>
      db.prepare('SELECT idem_key AS k, source, result_json AS r FROM committed WHERE run_id = ?').all(runId),
    ),
  ).toEqual([{ k: keys[1], source: 'manual', r: '{"sent":true}' }]);
  expect(countWhere('claims WHERE run_id = ?', runId)).toBe(0);
  expect(countWhere('audit') - auditBefore).toBe(3);
  expect(
    readSecured((db) => db.prepare('SELECT action, target, detail FROM audit WHERE run_id = ? ORDER BY id').all(runId)),
  ).toEqual([
    { action: 'expire', target: keys[0], detail: null },
    { action: 'resolve', target: keys[1], detail: 'provider confirms' },
    // One detail convention for every way in (lib/control/audit.ts): the dashboard's words, not the API's own '2 expired'.
    { action: 'sweep', target: runId, detail: `expired 2 orphaned claim(s): ${keys[2]}, ${keys[3]}` },
  ]);
});

test("the article's loop in Python: SIGKILLed between a side effect and its commit, re-run, each step committed once", async () => {
  const STEPS = 8;
  const HANG = 3;
  const runId = uniqueId('e2e-python');
  const dir = mkdtempSync(join(tmpdir(), 'waybill-python-'));
  const effects = join(dir, 'effects.jsonl');
  const env = {
    ...process.env,
    WAYBILL_URL: SECURED,
    WAYBILL_TOKEN: E2E_OPERATOR_TOKEN,
    RUN_ID: runId,
    STEPS: String(STEPS),
    EFFECTS: effects,
    LEASE_MS: String(SHORT_LEASE_MS),
  };
  try {
    // Run 1 hangs after the side effect of step 3, before its commit — where a crash hurts most.
    const first = python({ ...env, HANG_AT_STEP: String(HANG) });
    await expect
      .poll(() => first.out(), { timeout: 60_000 })
      .toContain(`hanging after the side effect of step ${HANG}`);
    first.proc.kill('SIGKILL');
    expect(await first.exit).toEqual({ code: null, signal: 'SIGKILL' });
    expect(countWhere('committed WHERE run_id = ?', runId)).toBe(HANG);
    expect(countWhere('claims WHERE run_id = ?', runId)).toBe(1);

    // Run 2 resumes at step 3: the dead claim is held until its lease passes, then taken over and re-run;
    // the receiver recognises the key, so the side effect is not applied twice.
    const second = python(env);
    expect(await second.exit).toEqual({ code: 0, signal: null });
    expect(JSON.parse(second.out().trim().split('\n').pop()!)).toEqual({
      executed: STEPS - HANG,
      skipped: 0,
      processed: STEPS,
    });
    // Run 3 finds nothing left to do.
    const third = python(env);
    expect(await third.exit).toEqual({ code: 0, signal: null });
    expect(JSON.parse(third.out().trim())).toEqual({ executed: 0, skipped: 0, processed: STEPS });

    const deliveries = readFileSync(effects, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { key: string; duplicate: boolean; receipt: string });
    expect(deliveries).toHaveLength(STEPS + 1);
    const applied = deliveries.filter((d) => !d.duplicate).map((d) => d.key);
    expect(applied).toEqual(Array.from({ length: STEPS }, (_, i) => `${runId}:step:${i}`));
    expect(deliveries.filter((d) => d.duplicate)).toEqual([
      expect.objectContaining({ key: `${runId}:step:${HANG}`, receipt: `receipt-${HANG}` }),
    ]);

    const committed = readSecured((db) =>
      db.prepare('SELECT idem_key AS k, result_json AS r FROM committed WHERE run_id = ? ORDER BY step').all(runId),
    );
    expect(committed).toEqual(
      Array.from({ length: STEPS }, (_, i) => ({
        k: `${runId}:step:${i}`,
        r: JSON.stringify({ receipt: `receipt-${i}` }),
      })),
    );
    expect(countWhere('claims WHERE run_id = ?', runId)).toBe(0);
    expect(countWhere("step_events WHERE run_id = ? AND outcome = 'expired'", runId)).toBe(1);
    expect(
      readSecured((db) =>
        db.prepare('SELECT step, executed, skipped, awaited FROM progress WHERE run_id = ?').get(runId),
      ),
    ).toEqual({ step: STEPS, executed: STEPS, skipped: 0, awaited: 0 });
  } finally {
    for (const proc of started) if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});

/** Every python process a test started, so a failed test leaves none hanging. */
const started: ChildProcess[] = [];

function python(env: NodeJS.ProcessEnv) {
  const proc = spawn('python3', ['examples/article_loop.py'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  started.push(proc);
  let out = '';
  let err = '';
  proc.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
  proc.stderr.setEncoding('utf8').on('data', (c: string) => (err += c));
  const exit = once(proc, 'close').then(([code, signal]) => {
    if (code !== 0 && signal === null) throw new Error(`article_loop.py exited ${code}: ${err}`);
    return { code: code as number | null, signal: signal as NodeJS.Signals | null };
  });
  return { proc, exit, out: () => out };
}
