/**
 * Which claims a Checkpoint takes over at once, and which it must wait for. The holder is a real library
 * loop process (test/fixtures/library-loop.ts) holding step 3; the judge is a Checkpoint in this process
 * with a 30 s lease, so waiting it out is never what ends a test: each wait is cut short by awaitTimeoutMs
 * and counted (AwaitTimeoutError, zero executions), and the one takeover asserts attempt 2. The judge waits on
 * a ManualClock of its own, jumped from poll to poll: the holder and its kill are real, the store's leases are
 * real time, and only the judge's patience costs nothing.
 */
import { describe, expect, it } from 'vitest';
import { Checkpoint } from '../../lib/checkpoint/checkpoint';
import { stepKey } from '../../lib/checkpoint/keys';
import { ManualClock } from '../../lib/clock';
import { AwaitTimeoutError } from '../../lib/errors';
import type { Store } from '../../lib/store/contract';
import { openStore } from '../../lib/store/index';
import { killHard, spawnFixture } from '../support/child';
import { postgresAvailable, testSchema } from '../support/postgres';
import { tempDir } from '../support/tmp';

const TTL = 30_000;
const KEY = stepKey('held-run', 3);
const pgUp = await postgresAvailable('own-claim takeover tests on PostgreSQL');

async function sqlite(): Promise<{ url: string; exec: (sql: string) => Promise<void> }> {
  const url = `file:${tempDir('waybill-takeover-').file('store.db')}`;
  const Database = (await import('better-sqlite3')).default;
  return {
    url,
    exec: async (sql) => {
      const db = new Database(url.slice(5));
      db.exec(sql);
      db.close();
    },
  };
}

async function postgres(): Promise<{ url: string; exec: (sql: string) => Promise<void> }> {
  const schema = await testSchema('wb_takeover');
  return {
    url: schema.url,
    exec: async (sql) => {
      await schema.admin.query(`SET search_path TO "${schema.name}"; ${sql}; RESET search_path`);
    },
  };
}

const targets: [string, typeof sqlite][] = [
  ['sqlite', sqlite],
  ...(pgUp ? [['postgres', postgres] as [string, typeof sqlite]] : []),
];

describe.each(targets)('own-claim takeover on %s', (_name, open) => {
  it("waits for a live process with its worker id, another machine's and another worker's claims; takes over its own dead one at once", async () => {
    const { url, exec } = await open();
    const store = await openStore(url, { synchronous: 'normal' });
    const effects = tempDir('waybill-takeover-effects-').file('effects.log');
    const holder = spawnFixture('library-loop.ts', {
      url,
      runId: 'held-run',
      workflow: 'held',
      steps: 5,
      workerId: 'laptop-loop',
      effects,
      holdAt: { step: 3, until: 'killed' },
    });
    try {
      await holder.waitForLine(/^IN step=3 /);
      let executions = 0;
      const tryStep = (store: Store, workerId: string) => {
        const clock = new ManualClock();
        return clock.runUntil(
          new Checkpoint(store, 'held-run', { workerId, leaseMs: TTL, pollMs: { min: 20, max: 100 }, clock }).runOnce(
            KEY,
            (ctx) => {
              executions++;
              return { attempt: ctx.attempt };
            },
            { step: 3, awaitTimeoutMs: 600 },
          ),
        );
      };
      const claim = () => store.getClaim(KEY, { claimTtlMs: TTL });
      const before = await claim();
      expect(before).toMatchObject({ workerId: 'laptop-loop', attempt: 1, orphaned: false });

      // 1. Our worker id, but its process is alive (on this machine): a live holder, waited for.
      await expect(tryStep(store, 'laptop-loop')).rejects.toBeInstanceOf(AwaitTimeoutError);
      expect(executions).toBe(0);
      expect(await claim()).toMatchObject({ token: before!.token, attempt: 1 });

      await killHard(holder);

      // 2. Dead, but the token names another machine: its pid says nothing here, so the lease is the evidence.
      const original = before!.token!;
      await exec(`UPDATE claims SET token = 'wb1_ffffffffffffffff' || substr(token, 21) WHERE idem_key = '${KEY}'`);
      await expect(tryStep(store, 'laptop-loop')).rejects.toBeInstanceOf(AwaitTimeoutError);
      expect(executions).toBe(0);
      await exec(`UPDATE claims SET token = '${original}' WHERE idem_key = '${KEY}'`);

      // 3. Dead on this machine, but another worker's: not ours to judge (the workers' own check does that).
      await expect(tryStep(store, 'someone-else')).rejects.toBeInstanceOf(AwaitTimeoutError);
      expect(executions).toBe(0);
      expect(await claim()).toMatchObject({ token: original, attempt: 1, orphaned: false });

      // 4. Ours, and its process is gone: taken over at once, as attempt 2, the old lease still in the future.
      const taken = await tryStep(store, 'laptop-loop');
      expect(taken).toEqual({ status: 'executed', result: { attempt: 2 } });
      expect(executions).toBe(1);
      const expired = (await store.listEvents('held-run')).filter((e) => e.outcome === 'expired');
      expect(expired).toHaveLength(1);
      expect(expired[0]!.at).toBeLessThan(before!.leaseExpiresAt!);
    } finally {
      await store.close();
    }
  });
});
