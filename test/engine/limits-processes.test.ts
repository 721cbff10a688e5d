/**
 * Issue 27's proof of the limits, with four real worker processes on one store: 40 runs of one customer under a
 * concurrency limit of 3 never have more than 3 running (sampled from the store throughout, and counted again
 * from the runs' own start and end times), and all complete, each step once; 30 runs under a rate limit of 10
 * starts a second never start 11 within a second of the store's clock, and do start within 10% of 10 a second.
 */
import { describe, expect, it } from 'vitest';
import { readOutbox } from '../../lib/engine/workflows/outbox';
import { type Child, spawnFixture } from '../support/child';
import { makeTarget, targetKinds } from '../support/targets';
import { tempDir } from '../support/tmp';
import { until } from '../support/until';

const kinds = await targetKinds('limit process tests');
const RUNS = 40;
const THROTTLED = 30;

/** The most intervals [start, end) that overlap at one instant. */
function mostAtOnce(spans: { start: number; end: number }[]): number {
  const edges = spans.flatMap(({ start, end }) => [
    { at: start, d: 1 },
    { at: end, d: -1 },
  ]);
  // An end before a start at the same instant: a run that ended frees its place for the one that starts.
  edges.sort((a, b) => a.at - b.at || a.d - b.d);
  let now = 0;
  let most = 0;
  for (const { d } of edges) most = Math.max(most, (now += d));
  return most;
}

describe.each(kinds)('limits across four %s worker processes', (kind) => {
  it('holds one key to 3 running and a workflow to 10 starts a second', async () => {
    const target = await makeTarget(kind);
    const store = await target.store();
    const outbox = tempDir('waybill-limits-').file('outbox.jsonl');
    for (let i = 0; i < RUNS; i++)
      await store.createRun({
        id: `acme-${String(i).padStart(2, '0')}`,
        workflow: 'per-customer',
        inputJson: JSON.stringify({ customer: 'acme' }),
        totalSteps: 1,
      });
    for (let i = 0; i < THROTTLED; i++)
      await store.createRun({ id: `call-${i}`, workflow: 'throttled', inputJson: '{}', totalSteps: 1 });

    const workers: Child[] = [];
    for (let w = 0; w < 4; w++) {
      const child = spawnFixture('limited-worker.ts', { url: target.url, outbox, id: `lim-${w}`, holdMs: 150 });
      workers.push(child);
    }
    await Promise.all(workers.map((child) => child.waitForLine(/READY/)));

    let samples = 0;
    let mostSampled = 0;
    await until(
      'every run to complete',
      async () => {
        const running = await store.listRuns({
          workflow: 'per-customer',
          status: 'running',
          limit: 100,
          claimTtlMs: 0,
        });
        samples++;
        mostSampled = Math.max(mostSampled, running.length);
        const done = await store.listRuns({ status: 'completed', limit: 200, claimTtlMs: 0 });
        return done.length === RUNS + THROTTLED;
      },
      { intervalMs: 10 },
    );
    for (const child of workers) child.kill('SIGTERM');
    for (const child of workers) expect((await child.exited).code).toBe(0);

    expect(samples).toBeGreaterThan(10);
    expect(mostSampled).toBeGreaterThanOrEqual(1);
    expect(mostSampled).toBeLessThanOrEqual(3);
    const acme = await Promise.all(
      Array.from({ length: RUNS }, (_, i) => store.getRun(`acme-${String(i).padStart(2, '0')}`)),
    );
    // Taken once each (no kills), so a run's start and end are its one time in a place.
    expect(acme.map((r) => r!.attempts)).toEqual(Array(RUNS).fill(1));
    expect(mostAtOnce(acme.map((r) => ({ start: r!.startedAt!, end: r!.finishedAt! })))).toBeLessThanOrEqual(3);

    // The pick counts a start within (t − 1 s, t]: no start may see 10 others in the second before it.
    const starts = (await Promise.all(Array.from({ length: THROTTLED }, (_, i) => store.getRun(`call-${i}`)))).map(
      (r) => r!.startedAt!,
    );
    starts.sort((a, b) => a - b);
    const most = Math.max(...starts.map((s) => starts.filter((t) => t > s - 1 && t <= s).length));
    expect(most).toBeLessThanOrEqual(10);
    // And the limit is reached, not just kept under: within 10% of 10 a second over the steady part of the run.
    // The window slides, so a first-to-last rate misleads: the first 10 start at once and the next 10 a second
    // after them, which reads 29 starts in 2 s (14.5/s) for a limiter that holds. What the window promises is the
    // 11th start a second after the 1st, the 12th a second after the 2nd, and so on: a start gets the place of the
    // one 10 before it. So the achieved rate is 10 over the mean of those 20 gaps: the first window's burst ends
    // no gap, and a short last window does not dilute it. Each gap is 1 s (the ceiling above) plus how
    // late a worker takes the freed place: a look every 50 ms at most (idle.ts) and a pick. Only a mean lateness
    // over 111 ms fails, which a busy machine's picks do not reach and a limiter admitting 5 a second (gaps of
    // 2 s) or one looking once a slot at a bad phase (~100 ms each) does.
    const gaps = starts.slice(10).map((s, i) => s - starts[i]!);
    expect(gaps).toHaveLength(THROTTLED - 10);
    const rate = 10 / (gaps.reduce((sum, g) => sum + g, 0) / gaps.length);
    expect(rate).toBeGreaterThanOrEqual(9);
    expect(rate).toBeLessThanOrEqual(11);
    // 30 starts at 10 a second span at least two seconds.
    expect(starts.at(-1)! - starts[0]!).toBeGreaterThanOrEqual(2);

    const mail = readOutbox(outbox);
    expect(mail.byKey.size).toBe(RUNS + THROTTLED);
    expect([...mail.byKey.values()].every((n) => n === 1)).toBe(true);
  }, 300_000);
});
