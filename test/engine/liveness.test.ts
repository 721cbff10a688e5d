/**
 * Workers that cannot see each other's pids (each in a pid namespace of its own, as containers on one host
 * or workers on two hosts) on PostgreSQL: a SIGKILLed one is proven dead by its liveness lock, not left to its
 * 30 s leases; a live one is never taken for dead, though its event loop blocks for 2.5 s and its lock's
 * connection is terminated again and again. Real namespaces (unshare), real processes, real signals.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { BIN } from '../cli/support';
import { fixtureArgs, spawnCommand } from '../support/child';
import { Admin, postgresAvailable } from '../support/postgres';
import { makeTarget, type Target } from '../support/targets';
import { tempDir } from '../support/tmp';
import { executionsByKey, until } from './support';

const UNSHARE = ['--pid', '--fork', '--kill-child', '--mount-proc'];
const isolated = spawnSync('unshare', [...UNSHARE, 'true']).status === 0;
if (!isolated)
  console.warn(
    '\n!!! liveness tests SKIPPED: `unshare --pid` is not permitted here (it needs root or user namespaces).\n',
  );
const pgUp = isolated && (await postgresAvailable('liveness tests'));

/** `waybill worker` (or a fixture) as pid 1 of a namespace of its own; killing it kills the worker. */
function isolatedWorker(target: Target, id: string, dataDir: string) {
  return spawnCommand('unshare', [...UNSHARE, process.execPath, BIN, 'worker', '--id', id], {
    env: { DATABASE_URL: target.url, WAYBILL_DATA_DIR: dataDir },
  });
}

function isolatedFixture(fixture: string, arg: unknown) {
  return spawnCommand('unshare', [...UNSHARE, process.execPath, ...fixtureArgs(fixture, arg)]);
}

/** Terminates the session holding a worker's liveness lock, as an operator's pg_terminate_backend would. */
async function terminateLiveness(schema: string, workerId: string): Promise<number> {
  const admin = await Admin.connect();
  try {
    const rows = await admin.query(
      `SELECT pg_terminate_backend(l.pid) AS t FROM pg_locks l
      WHERE l.locktype = 'advisory' AND l.classid = ${0x57594231}::oid AND l.objsubid = 2
        AND l.objid = (hashtext($1 || ':' || $2)::bigint & 4294967295)::oid`,
      [schema, workerId],
    );
    return rows.length;
  } finally {
    await admin.end();
  }
}

describe.skipIf(!pgUp)('liveness across pid namespaces on postgres', () => {
  it('a worker SIGKILLed mid-step is proven dead by its free lock: its claim expired, the run resumed, each step once', async () => {
    const target = await makeTarget('postgres');
    const store = await target.store();
    const data = tempDir('waybill-outbox-');
    const outbox = data.file('outbox.jsonl');
    await store.createRun({
      id: 'far',
      workflow: 'notify',
      inputJson: JSON.stringify({ count: 30, outbox: 'outbox.jsonl', latencyMs: 300 }),
      totalSteps: 30,
    });
    const workers = new Map(['fa', 'fb'].map((id) => [id, isolatedWorker(target, id, data.path)]));
    const claim = await until(
      'a fresh claim',
      async () =>
        (await store.listClaims({ runId: 'far', claimTtlMs: 30_000 })).find(
          (c) => c.step !== null && c.step >= 5 && c.workerId && Date.now() / 1000 - c.claimedAt < 0.1,
        ),
      // A claim is fresh for a tenth of a second: look often enough to see most of them.
      { intervalMs: 20 },
    );
    const victim = claim.workerId!;
    workers.get(victim)!.kill('SIGKILL');
    await workers.get(victim)!.exited;
    await until('the run to complete', async () => (await store.getRun('far'))?.status === 'completed', {
      timeoutMs: 120_000,
    });

    // The mechanism: expired by proof of death (its lock) at once, not by its lease passing; then taken over from
    // the dead holder, so the step ran again as its next attempt, in doubt, and the takeover says it died.
    const events = await store.listEvents('far', { limit: 1000 });
    expect(events.filter((e) => e.outcome === 'expired').map((e) => e.detail?.replace(victim, 'V'))).toEqual([
      'worker V died (its liveness lock is free and it has not beaten for 3 beats); its claim expired: the step runs again, told it is in doubt',
      expect.stringMatching(/^run lease of V passed or its worker died; resumed by f[ab]$/),
      'worker V was declared dead; taken over',
    ]);
    const takeover = events.find((e) => e.detail === `worker ${victim} was declared dead; taken over`);
    expect([takeover?.previousWorkerId, takeover?.attempt]).toEqual([victim, 2]);
    expect((await store.listWorkers()).find((w) => w.id === victim)?.stoppedAt).toEqual(expect.any(Number));
    const executions = executionsByKey(outbox);
    expect(executions.size).toBe(30);
    expect([...executions.values()].every((n) => n === 1)).toBe(true);
    expect((await store.listCommitted('far', { limit: 100 })).length).toBe(30);
  }, 180_000);

  it('a live worker blocked for 2.5 s, its lock connection terminated 5 times, is never taken for dead', async () => {
    const target = await makeTarget('postgres');
    const schema = new URL(target.url).searchParams.get('schema')!;
    const store = await target.store();
    const effects = tempDir('waybill-effects-').file('effects.txt');
    await store.createRun({
      id: 'blocked',
      workflow: 'block',
      inputJson: JSON.stringify({ steps: 20 }),
      totalSteps: 20,
    });
    const busy = isolatedFixture('engine-block-worker.ts', { url: target.url, effects, id: 'busy', latencyMs: 400 });
    await busy.waitForLine(/READY/);
    await until('the first worker to take the run', async () => (await store.getRun('blocked'))?.owner === 'busy');
    const idle = isolatedFixture('engine-block-worker.ts', { url: target.url, effects, id: 'idle', latencyMs: 400 });
    await idle.waitForLine(/READY/);
    let terminated = 0;
    while (terminated < 5 && (await store.getRun('blocked'))?.status !== 'completed') {
      terminated += await terminateLiveness(schema, 'busy');
      await sleep(500);
    }
    await until('the run to complete', async () => (await store.getRun('blocked'))?.status === 'completed', {
      timeoutMs: 120_000,
    });

    expect(terminated).toBe(5);
    const lines = readFileSync(effects, 'utf8').trim().split('\n');
    expect(lines).toEqual(Array.from({ length: 20 }, (_, n) => `blocked:step:${n} busy`));
    expect((await store.listEvents('blocked')).filter((e) => e.outcome === 'expired')).toEqual([]);
    expect((await store.listWorkers()).find((w) => w.id === 'busy')?.stoppedAt).toBeNull();
    // Pid 1 of a namespace hears no SIGTERM from outside: the test's cleanup SIGKILLs them (and --kill-child the workers).
  }, 180_000);
});
