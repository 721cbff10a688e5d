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
import { makeTarget, type Target, targetKinds } from '../support/targets';
import { tempDir } from '../support/tmp';
import { executionsByKey, startWorker, until } from './support';

const kinds = await targetKinds('durable wait process tests');
/**
 * A bound on a hang only: each case spawns a worker or a CLI process a dozen to twenty times, and on a loaded
 * machine (the whole suite's other processes beside it) each spawn takes seconds.
 */
const HANG_MS = 600_000;

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

  it(
    'SIGKILL while it waits, approve from the CLI, another worker delivers it exactly once; reject sends nothing',
    async () => {
      const target = await makeTarget(kind);
      const { env, outbox } = setup();
      await ok(target, ['start', 'review-and-send', '--input', '{}', '--id', 'send-me']);
      await ok(target, ['start', 'review-and-send', '--input', '{}', '--id', 'drop-me']);
      const store = await target.store();
      const first = startWorker(target, ['--id', 'w1', '--concurrency', '1'], env);
      await until(
        'both runs to wait',
        async () =>
          (await store.getRun('send-me'))?.status === 'waiting' &&
          (await store.getRun('drop-me'))?.status === 'waiting',
        { timeoutMs: 60_000 },
      );
      const wait = await store.getWait('send-me', 'approval', 'review');
      expect(JSON.parse(wait!.detailsJson!)).toMatchObject({ to: 'customer@example.com', model: 'simulated' });
      // Concurrency 1, two runs parked: the one slot is free, and another run completes while they wait.
      await ok(target, ['start', 'notify', '--input', '{"count": 3, "outbox": "other.jsonl"}', '--id', 'meanwhile']);
      await until('another run to complete', async () => (await store.getRun('meanwhile'))?.status === 'completed', {
        timeoutMs: 60_000,
      });
      expect([(await store.getRun('send-me'))!.status, (await store.getRun('drop-me'))!.status]).toEqual([
        'waiting',
        'waiting',
      ]);
      const listed = (args: string[]) =>
        ok(target, ['runs', ...args, '--json']).then((out) =>
          (JSON.parse(out) as { runs: { id: string }[] }).runs.map((r) => r.id).sort(),
        );
      expect(await listed(['--waiting', 'approval'])).toEqual(['drop-me', 'send-me']);
      expect(await listed(['--waiting', 'signal'])).toEqual([]);
      expect(await listed(['--waiting', 'approval', '--status', 'waiting'])).toEqual(['drop-me', 'send-me']);
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
        'both runs to end',
        async () =>
          (await store.getRun('send-me'))?.status === 'completed' &&
          (await store.getRun('drop-me'))?.status === 'rejected',
        { timeoutMs: 60_000 },
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
    },
    HANG_MS,
  );

  it(
    'SIGKILL between the approval and the delivery, 20 trials: each kill lands with the send claimed, each message delivered exactly once',
    async () => {
      const target = await makeTarget(kind);
      const { env, outbox } = setup();
      const store = await target.store();
      const ids = Array.from({ length: 20 }, (_, i) => `trial-${i}`);
      for (const id of ids) {
        await store.createRun({
          id,
          workflow: 'review-and-send',
          // The send takes 5 s before it reaches the receiver: the window the kill must land in, in which this process
          // sees the claim and freezes the worker (milliseconds quiet, seconds at worst under load). A miss fails the
          // trial's assertion below, naming it, rather than counting wrong.
          inputJson: JSON.stringify({ latencyMs: 5000 }),
          totalSteps: 2,
        });
      }
      const parker = startWorker(target, ['--id', 'parker', '--concurrency', '20'], env);
      await until(
        'all 20 to wait',
        async () => (await Promise.all(ids.map((id) => store.getRun(id)))).every((r) => r?.status === 'waiting'),
        { timeoutMs: 90_000 },
      );
      parker.child.kill('SIGKILL');
      await once(parker.child, 'exit');
      const deps = { store: async () => store, claimTtlMs: 30_000, maxBytes: 1_000_000 };
      const caller = { actor: 'ann (operator)', role: 'operator' as const, channel: 'api' as const };

      // Trial i: a fresh worker (which also finishes trial i-1's run, its killed predecessor's pid being gone), the
      // approval of run i, then the worker frozen (SIGSTOP) until the store shows it holding run i's send claim, and
      // only then SIGKILLed: the kill lands after the approval and before the delivery's commit, every time.
      const killedHolding: string[] = [];
      for (const [i, id] of ids.entries()) {
        const worker = startWorker(target, ['--id', `k${i}`, '--concurrency', '2'], env);
        await waits.decide(deps, caller, { runId: id, approve: true });
        const deadline = Date.now() + 240_000;
        const sendClaim = async () =>
          (await store.listClaims({ runId: id, claimTtlMs: 30_000 })).find((c) => c.idemKey === `${id}:send`);
        for (;;) {
          if (Date.now() > deadline) throw new Error(`trial ${i}: k${i} never held ${id}:send`);
          // Looked for while the worker runs (freezing it for every look starved it on a loaded machine), then
          // frozen and looked at again: the kill lands while the claim is held, the delivery not yet committed.
          const seen = await sendClaim();
          if (seen) {
            worker.child.kill('SIGSTOP');
            const claim = await sendClaim();
            expect(claim?.token, `trial ${i}: the send committed within its 5 s window`).toBe(seen.token);
            expect((await store.listCommitted(id, { limit: 10 })).map((c) => c.idemKey)).toEqual([`${id}:draft`]);
            worker.child.kill('SIGKILL');
            await once(worker.child, 'exit');
            killedHolding.push(`${id}:${seen.workerId}`);
            break;
          }
          await sleep(15);
        }
      }
      expect(killedHolding).toEqual(ids.map((id, i) => `${id}:k${i}`));

      startWorker(target, ['--id', 'finisher', '--concurrency', '20'], env);
      await until(
        'every run to complete',
        async () => (await Promise.all(ids.map((id) => store.getRun(id)))).every((r) => r?.status === 'completed'),
        { timeoutMs: 90_000 },
      );
      const delivered = readOutbox(outbox);
      // Each message went out once; a duplicate is a resend the receiver refused (a kill after the delivery and
      // before its commit), never a second message.
      expect([delivered.delivered, delivered.unreadable]).toEqual([20, 0]);
      expect([...delivered.byKey.keys()].sort()).toEqual(ids.map((id) => `${id}:send`).sort());
      const executions = executionsByKey(outbox);
      for (const id of ids) expect(executions.get(`${id}:send`)).toBeGreaterThanOrEqual(1);
      for (const id of ids)
        expect((await store.listCommitted(id, { limit: 10 })).map((c) => c.idemKey).sort()).toEqual([
          `${id}:draft`,
          `${id}:send`,
        ]);
      // One decision each, audited once, whatever died when.
      expect((await store.listAudit({ action: 'approve', limit: 100 })).length).toBe(20);
    },
    HANG_MS,
  );
});
