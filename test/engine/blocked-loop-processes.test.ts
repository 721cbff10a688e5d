/**
 * A live worker whose event loop is blocked for 2.5 s is not taken over under the default leases, on every
 * backend: real worker processes, the store's events and the step's side effects counted.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { spawnFixture } from '../support/child';
import { makeTarget, targetKinds } from '../support/targets';
import { tempDir } from '../support/tmp';
import { until } from '../support/until';

const kinds = await targetKinds('engine process tests');

describe.each(kinds)('workers on %s', (kind) => {
  it('does not take over a live worker whose event loop is blocked for 2.5 s (default leases)', async () => {
    const target = await makeTarget(kind);
    const effects = tempDir('waybill-effects-').file('effects.txt');
    const store = await target.store();
    await store.createRun({ id: 'blocked', workflow: 'block', inputJson: JSON.stringify({ steps: 6 }), totalSteps: 6 });
    const first = spawnFixture('engine-block-worker.ts', { url: target.url, effects, id: 'busy' });
    await first.waitForLine(/READY/);
    await until('the first worker to take the run', async () => (await store.getRun('blocked'))?.owner === 'busy');
    const second = spawnFixture('engine-block-worker.ts', { url: target.url, effects, id: 'idle' });
    await second.waitForLine(/READY/);
    await until('the run to complete', async () => (await store.getRun('blocked'))?.status === 'completed', {
      timeoutMs: 60_000,
    });

    const lines = readFileSync(effects, 'utf8').trim().split('\n');
    expect(lines).toEqual([0, 1, 2, 3, 4, 5].map((n) => `blocked:step:${n} busy`));
    const events = await store.listEvents('blocked');
    expect(events.filter((e) => e.outcome === 'expired')).toEqual([]);
    first.kill('SIGTERM');
    second.kill('SIGTERM');
    expect((await first.exited).code).toBe(0);
    expect((await second.exited).code).toBe(0);
  });
});
