/**
 * A fan-out under real SIGKILLs, on every backend: a parent starts 200 children and joins them while its worker
 * process (one run at a time) is killed 10 times and replaced. Counts come from the store and from the outbox,
 * the receiver's own record of deliveries: a second delivery of a key is a duplicate there, which only a kill
 * between a delivery and its commit can cause.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { readOutbox } from '../../lib/engine/workflows/outbox';
import { type Child, killHard, spawnFixture } from '../support/child';
import { makeTarget, targetKinds } from '../support/targets';
import { tempDir } from '../support/tmp';
import { until } from '../support/until';

const kinds = await targetKinds('child-run process tests');
const CHILDREN = 200;
const KILLS = 10;

describe.each(kinds)('a fan-out of %s processes', (kind) => {
  it(`joins ${CHILDREN} children with its worker SIGKILLed ${KILLS} times: each child once, the join once`, async () => {
    const target = await makeTarget(kind);
    const store = await target.store();
    const outbox = tempDir('waybill-fanout-').file('outbox.jsonl');
    await store.createRun({
      id: 'fan',
      workflow: 'fanout',
      inputJson: JSON.stringify({ count: CHILDREN }),
      totalSteps: null,
    });
    let generation = 0;
    const start = async (): Promise<{ id: string; child: Child }> => {
      const id = `fan-w${generation++}`;
      const child = spawnFixture('fanout-worker.ts', { url: target.url, outbox, id, latencyMs: 5 });
      await child.waitForLine(/READY/);
      return { id, child };
    };
    const ended = async () =>
      (await store.listRuns({ workflow: 'leaf', claimTtlMs: 30_000, limit: 1000 })).filter(
        (r) => r.status === 'completed',
      ).length;

    let worker = await start();
    const killed: string[] = [];
    let seen = -1;
    while (killed.length < KILLS) {
      // Each kill waits for progress since the last, so the kills spread over the fan-out, the waits and the join.
      const now = await until('progress since the last kill', async () => {
        const run = await store.getRun('fan');
        if (run?.status === 'completed') return 'done';
        const n = await ended();
        return n > seen ? n : null;
      });
      if (now === 'done') break;
      seen = now as number;
      await sleep(20 + Math.random() * 80);
      await killHard(worker.child);
      killed.push(worker.id);
      worker = await start();
    }
    await until('the parent to complete', async () => (await store.getRun('fan'))?.status === 'completed', {
      timeoutMs: 300_000,
    });
    worker.child.kill('SIGTERM');
    expect((await worker.child.exited).code).toBe(0);

    expect(killed.length).toBe(KILLS);
    const parent = (await store.getRun('fan'))!;
    expect(JSON.parse(parent.outputJson!)).toEqual(Array.from({ length: CHILDREN }, (_, n) => n * 2));
    const children = (await store.listRuns({ workflow: 'leaf', claimTtlMs: 30_000, limit: 1000 })).map((r) => r.id);
    expect(children.sort()).toEqual(Array.from({ length: CHILDREN }, (_, n) => `fan:leaf-${n}`).sort());
    // Each child's step and the parent's join committed once; the receiver holds each delivery once.
    for (const id of [...children, 'fan']) {
      expect((await store.listCommitted(id, { limit: 1000 })).length).toBe(id === 'fan' ? CHILDREN + 1 : 1);
    }
    const mail = readOutbox(outbox);
    expect(mail.delivered).toBe(CHILDREN + 1);
    expect([...mail.byKey.values()].every((n) => n === 1)).toBe(true);
    expect(mail.byKey.has('fan:join')).toBe(true);
    // A delivery seen twice needs a kill between it and its commit: at most one per kill.
    expect(mail.duplicates).toBeLessThanOrEqual(KILLS);
  }, 600_000);
});
