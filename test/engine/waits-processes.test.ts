/**
 * review-and-send with real `waybill worker` processes and the real CLI, killed with real SIGKILLs, on every
 * backend. What counts is the outbox (the receiver's own record: a `duplicate` line is a second execution).
 */
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { waits } from '../../lib/control';
import { readOutbox } from '../../lib/engine/workflows/outbox';
import { runCli } from '../cli/support';
import { makeTarget, targetKinds, type Target } from '../support/targets';
import { tempDir } from '../support/tmp';
import { executionsByKey, startWorker, until } from './support';

const kinds = await targetKinds('durable wait process tests');

async function cli(target: Target, args: string[], env: Record<string, string> = {}) {
  const result = await runCli(args, { env: { DATABASE_URL: target.url, WAYBILL_SQLITE_SYNC: 'normal', ...env } });
  return result;
}
async function ok(target: Target, args: string[]) {
  const result = await cli(target, args);
  if (result.code !== 0) throw new Error(`waybill ${args.join(' ')} exited ${result.code}: ${result.stderr}`);
  return result.stdout;
}

describe.each(kinds)('review-and-send on %s', (kind) => {
  function setup() {
    const data = tempDir('waybill-waits-');
    const env = {
      WAYBILL_HEARTBEAT_MS: '100',
      WAYBILL_RUN_LEASE_MS: '5000',
      WAYBILL_LEASE_MS: '5000',
      WAYBILL_DATA_DIR: data.path,
    };
    return { data, env, outbox: data.file('review-and-send.jsonl') };
  }

  it('SIGKILL while it waits, approve from the CLI, another worker delivers it exactly once; reject sends nothing', async () => {
    const target = await makeTarget(kind);
    const { env, outbox } = setup();
    await ok(target, ['start', 'review-and-send', '--input', '{}', '--id', 'send-me']);
    await ok(target, ['start', 'review-and-send', '--input', '{}', '--id', 'drop-me']);
    const store = await target.store();
    const first = startWorker(target, ['--id', 'w1'], env);
    await until(
      async () =>
        (await store.getRun('send-me'))?.status === 'waiting' && (await store.getRun('drop-me'))?.status === 'waiting',
      'both runs to wait',
      60_000,
    );
    const wait = await store.getWait('send-me', 'review');
    expect(JSON.parse(wait!.detailsJson!)).toMatchObject({ to: 'customer@example.com', model: 'simulated' });
    first.child.kill('SIGKILL');
    await once(first.child, 'exit');

    expect((await ok(target, ['approve', 'send-me', '--note', 'looks right', '--as', 'ann'])).trim()).toBe(
      'approved review of send-me: looks right; the run goes on',
    );
    const again = await cli(target, ['approve', 'send-me', '--as', 'bob', '--json']);
    expect(again.code).toBe(1);
    expect(JSON.parse(again.stderr).error.code).toBe('CONFLICT');
    const noNote = await cli(target, ['reject', 'drop-me']);
    expect(noNote.code).toBe(2);
    await ok(target, ['reject', 'drop-me', '--note', 'wrong customer', '--as', 'ann']);

    startWorker(target, ['--id', 'w2'], env);
    await until(
      async () =>
        (await store.getRun('send-me'))?.status === 'completed' &&
        (await store.getRun('drop-me'))?.status === 'rejected',
      'both runs to end',
      60_000,
    );
    expect([...executionsByKey(outbox)]).toEqual([['send-me:send', 1]]);
    expect(readOutbox(outbox).delivered).toBe(1);
    expect((await store.getRun('drop-me'))!.error).toBe('wrong customer');
    const audit = JSON.parse((await ok(target, ['audit', '--json'])).trim()) as {
      entries: { action: string; actor: string; target: string; detail: string | null }[];
    };
    expect(
      audit.entries
        .filter((e) => e.action === 'approve' || e.action === 'reject')
        .map((e) => [e.action, e.target, e.detail])
        .sort(),
    ).toEqual([
      ['approve', 'send-me/review', 'looks right'],
      ['reject', 'drop-me/review', 'wrong customer'],
    ]);
  });

  it('SIGKILL between the approval and the delivery, 20 runs, ≥ 20 kills: each message delivered exactly once', async () => {
    const target = await makeTarget(kind);
    const { env, outbox } = setup();
    const store = await target.store();
    const ids = Array.from({ length: 20 }, (_, i) => `trial-${i}`);
    for (const id of ids) {
      await store.createRun({
        id,
        workflow: 'review-and-send',
        inputJson: JSON.stringify({ latencyMs: 150 }),
        totalSteps: 2,
      });
    }
    let worker = startWorker(target, ['--id', 'k0', '--concurrency', '20'], env);
    await until(
      async () => (await Promise.all(ids.map((id) => store.getRun(id)))).every((r) => r?.status === 'waiting'),
      'all 20 to wait',
      90_000,
    );
    const deps = { store: async () => store, claimTtlMs: 30_000, maxBytes: 1_000_000 };
    const caller = { actor: 'ann (operator)', role: 'operator' as const, channel: 'api' as const };
    for (const id of ids) await waits.decide(deps, caller, { runId: id, approve: true });
    let kills = 0;
    const done = async () =>
      (await Promise.all(ids.map((id) => store.getRun(id)))).every((r) => r?.status === 'completed');
    while (kills < 20 || !(await done())) {
      if (kills >= 60) break;
      await sleep(80 + Math.random() * 250);
      worker.child.kill('SIGKILL');
      await once(worker.child, 'exit');
      kills++;
      worker = startWorker(target, ['--id', `k${kills}`, '--concurrency', '20'], env);
    }
    await until(done, 'every run to complete', 90_000);
    expect(kills).toBeGreaterThanOrEqual(20);
    const deliveries = executionsByKey(outbox);
    const delivered = readOutbox(outbox);
    expect(delivered.delivered).toBe(20);
    expect(new Set([...deliveries.keys()])).toEqual(new Set(ids.map((id) => `${id}:send`)));
    // A duplicate is a resend the receiver refused (killed after delivering, before committing): never a second message.
    for (const id of ids)
      expect((await store.listCommitted(id, { limit: 10 })).map((c) => c.idemKey).sort()).toEqual([
        `${id}:draft`,
        `${id}:send`,
      ]);
  });
});
