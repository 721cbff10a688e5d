/**
 * A worker paused with SIGSTOP past its leases, on every backend: once resumed, its commit is refused by the
 * fencing token and the step's result is the worker's that took it over. Counts come from the store (committed
 * rows, events) and from the notify outbox (the receiver's own record of deliveries).
 */
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { readOutbox } from '../../lib/engine/workflows/outbox';
import { runCli } from '../cli/support';
import { makeTarget, type Target, targetKinds } from '../support/targets';
import { tempDir } from '../support/tmp';
import { until } from '../support/until';
import { startWorker } from './support';

const kinds = await targetKinds('engine process tests');
const TRIALS = 20;
const STEPS = 60;

/**
 * Whether another connection can take SQLite's write lock within a moment (always true on PostgreSQL, whose
 * workers hold no lock between statements). A worker stopped inside a write transaction (a heartbeat, a
 * batch) keeps the lock while stopped, and no other worker can write at all: that is SIGSTOP's doing, not a
 * lease's, and a test of leases must not count it. Another live writer holds it for a moment only.
 */
async function writeLockFree(target: Target): Promise<boolean> {
  if (target.kind !== 'sqlite') return true;
  const db = new Database(target.url.replace(/^file:/, ''), { timeout: 0 });
  try {
    for (let attempt = 0; attempt < 25; attempt++) {
      try {
        db.exec('BEGIN IMMEDIATE');
        db.exec('ROLLBACK');
        return true;
      } catch {
        await sleep(20);
      }
    }
    return false;
  } finally {
    db.close();
  }
}

/** Whether the outbox's file lock (lib/engine/workflows/file-lock.ts: a file holding its owner's pid) is this pid's. */
function holdsOutboxLock(outbox: string, pid: number | undefined): boolean {
  try {
    return readFileSync(`${outbox}.lock`, 'utf8').trim() === String(pid);
  } catch {
    return false;
  }
}

describe.each(kinds)('workers on %s', (kind) => {
  it(`a worker paused with SIGSTOP past its leases commits nothing once resumed: ${TRIALS} trials`, async () => {
    const target = await makeTarget(kind);
    // The workers' data directory holds the outbox; the runs name it by its path inside.
    const data = tempDir('waybill-outbox-');
    const outbox = data.file('outbox.jsonl');
    const env = {
      WAYBILL_HEARTBEAT_MS: '100',
      WAYBILL_RUN_LEASE_MS: '500',
      WAYBILL_LEASE_MS: '500',
      WAYBILL_DATA_DIR: data.path,
    };
    const store = await target.store();
    // A signal that lands outside a step is not a trial, and a busy machine lands more of them: when a run ends
    // before the trials are done, the next run gives them more steps, so the count of trials never waits on luck.
    const runs: string[] = [];
    const startRun = async (): Promise<string> => {
      const id = `stop-${runs.length + 1}`;
      const input = JSON.stringify({ count: STEPS, outbox: 'outbox.jsonl', latencyMs: 250 });
      const started = await runCli(['start', 'notify', '--id', id, '--input', input], {
        env: { DATABASE_URL: target.url, WAYBILL_SQLITE_SYNC: 'normal' },
      });
      expect(started.code, started.stderr).toBe(0);
      runs.push(id);
      return id;
    };
    let run = await startRun();
    const workers = new Map(['sa', 'sb'].map((id) => [id, startWorker(target, ['--id', id], env).child]));

    const trials: { key: string; paused: string }[] = [];
    const missed = { finished: 0, locked: 0, neverBegan: 0 };
    const tried = new Set<string>();
    while (trials.length < TRIALS) {
      expect(
        runs.length,
        `trials ${trials.length}, signals that were not trials ${JSON.stringify(missed)}`,
      ).toBeLessThan(10);
      // Stop a worker early in its step's 250 ms latency sleep: not while it commits, and not while it holds
      // the outbox's file lock (a stopped holder is alive, so nobody may break its lock).
      const claim = await until(
        'a fresh claim, or the run to end',
        async () => {
          const fresh = (await store.listClaims({ runId: run, claimTtlMs: 30_000 })).find(
            (c) => c.workerId && !tried.has(c.idemKey) && Date.now() / 1000 - c.claimedAt < 0.1,
          );
          return fresh ?? ((await store.getRun(run))?.status === 'completed' && 'ended');
        },
        // A claim is fresh for a tenth of a second: look often enough to see most of them.
        { intervalMs: 20 },
      );
      if (claim === 'ended') {
        run = await startRun();
        continue;
      }
      tried.add(claim.idemKey);
      const paused = claim.workerId!;
      const frozen = workers.get(paused)!;
      frozen.kill('SIGSTOP');
      const still = (await store.listClaims({ runId: run, claimTtlMs: 30_000 })).find(
        (c) => c.idemKey === claim.idemKey,
      );
      const finished = still?.token !== claim.token;
      if (finished || holdsOutboxLock(outbox, frozen.pid) || !(await writeLockFree(target))) {
        // The step finished before the signal landed, or the signal froze the worker holding a lock no lease
        // can take from a live process (the outbox's, mid-delivery on a slow machine, or SQLite's write lock:
        // see writeLockFree): not a trial.
        frozen.kill('SIGCONT');
        missed[finished ? 'finished' : 'locked']++;
        continue;
      }
      // The other worker takes the run over once the run lease passes, then the step once the claim lease passes.
      const landed = await until(`${claim.idemKey} to be committed`, async () => store.getCommitted(claim.idemKey));
      frozen.kill('SIGCONT');
      expect(landed.workerId).not.toBe(paused);
      // The paused worker wakes up inside the step: its commit (or its renewal) is refused by the fencing token.
      // Unless the claim was one taken ahead by its previous commit and the worker stopped before the step
      // began: then it wakes, finds the step committed by the other and its run gone, and has nothing to be
      // fenced on (no event, by design). That is not a trial: it is told apart by the worker beating again
      // for a second without a fencing event and holding no claim on the key.
      const wokeAt = Date.now() / 1000;
      const fenced = await until(`${paused} to be fenced`, async () => {
        const events = await store.listEvents(run, { limit: 10_000 });
        if (
          events.some(
            (e) =>
              e.idemKey === claim.idemKey &&
              e.workerId === paused &&
              (e.outcome === 'lease_lost' || e.outcome === 'failed'),
          )
        )
          return 'fenced';
        const beat = (await store.listWorkers()).find((w) => w.id === paused)?.heartbeatAt ?? 0;
        const holds = (await store.listClaims({ runId: run, claimTtlMs: 30_000 })).some(
          (c) => c.idemKey === claim.idemKey && c.workerId === paused,
        );
        return beat > wokeAt + 1 && !holds ? 'never began' : null;
      });
      if (fenced === 'fenced') trials.push({ key: claim.idemKey, paused });
      else missed.neverBegan++;
    }
    for (const id of runs) {
      await until(`${id} to complete`, async () => (await store.getRun(id))?.status === 'completed', {
        progress: async () => (await store.loadProgress(id))?.step ?? 0,
      });
    }
    console.log(
      `sigstop (${kind}): ${trials.length} trials over ${runs.length} runs; not trials: ${JSON.stringify(missed)}`,
    );

    for (const id of runs) expect((await store.listCommitted(id, { limit: 100 })).length).toBe(STEPS);
    for (const trial of trials) expect((await store.getCommitted(trial.key))?.workerId).not.toBe(trial.paused);
    const mail = readOutbox(outbox);
    expect(mail.delivered).toBe(STEPS * runs.length);
    expect([...mail.byKey.values()].every((n) => n === 1)).toBe(true);
    // A hang guard only: on a busy machine more signals land outside a step and are not trials, so 20 take longer.
  }, 600_000);
});
