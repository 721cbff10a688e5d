/**
 * `waybill worker` as a real process: it runs runs to completion, `start --follow` watches one finish, and
 * SIGTERM drains it — exit 0, its run handed back (queued) or completed, never left running.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { spawnCommand } from '../support/child';
import { until } from '../support/until';
import { BIN, type Db, freshDb, json } from './support';

function runRow(db: Db, id: string): { status: string; owner: string | null; step: number | null } | undefined {
  return db.raw((c) =>
    c
      .prepare<[string], { status: string; owner: string | null; step: number | null }>(
        'SELECT r.status, r.owner, p.step FROM runs r LEFT JOIN progress p ON p.run_id = r.id WHERE r.id = ?',
      )
      .get(id),
  );
}

describe('waybill worker', () => {
  it('runs a run to completion, is followed by start --follow, and drains on SIGTERM', async () => {
    const db = await freshDb();
    const outbox = join(db.dir, 'outbox.jsonl');
    const worker = spawnCommand(process.execPath, [
      BIN,
      '--db',
      db.url,
      'worker',
      '--id',
      'cli-test-worker',
      '--concurrency',
      '2',
    ]);

    // start --follow on a pipe: progress lines on stderr, the outcome on stdout, exit 0 once completed.
    const followed = await db.cli([
      'start',
      'notify',
      '--follow',
      '--id',
      'short',
      '--input',
      JSON.stringify({ count: 4, outbox: 'outbox.jsonl', latencyMs: 100 }),
    ]);
    expect(followed.code, followed.stderr).toBe(0);
    expect(followed.stdout).toBe(
      'queued short; following it (a worker runs it: waybill worker)\nrun short completed\n',
    );
    expect(followed.stderr).toMatch(/^short {2}(queued|running)/);
    expect(followed.stderr.trimEnd().split('\n').pop()).toMatch(/^short {2}completed {2}\[█{24}\] 4\/4 100%$/);
    expect(json(await db.cli(['inspect', 'short', '--json']))).toMatchObject({
      run: { status: 'completed', owner: null },
      progress: { step: 4 },
      committed: 4,
    });

    // A long run: the worker is stopped in the middle of it.
    await db.cli([
      'start',
      'notify',
      '--id',
      'long',
      '--input',
      JSON.stringify({ count: 400, outbox: 'outbox.jsonl', latencyMs: 50 }),
    ]);
    await until('the long run to make progress', () => (runRow(db, 'long')?.step ?? 0) >= 3);
    // Not on a terminal: a `progress` log line every few seconds instead of a bar.
    await until(
      'a progress line',
      () =>
        worker
          .stderr()
          .split('\n')
          .some((l) => l.includes('"msg":"progress"') && l.includes('"runId":"long"')),
      { timeoutMs: 10_000 },
    );
    worker.kill('SIGTERM');
    const exit = await Promise.race([worker.exited, sleep(15_000).then(() => 'timeout' as const)]);
    expect(exit, worker.stderr()).toEqual({ code: 0, signal: null });

    const long = runRow(db, 'long')!;
    expect(['queued', 'completed']).toContain(long.status);
    expect(long.owner).toBeNull();
    expect(db.raw((c) => c.prepare("SELECT stopped_at FROM workers WHERE id = 'cli-test-worker'").get())).toEqual({
      stopped_at: expect.any(Number),
    });
    // Every stderr line is a JSON log line; every delivery happened once.
    for (const line of worker.stderr().trimEnd().split('\n')) expect(() => JSON.parse(line), line).not.toThrow();
    const deliveries = readFileSync(outbox, 'utf8')
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as { key: string; status: string });
    expect(deliveries.filter((d) => d.status !== 'delivered')).toEqual([]);
    expect(new Set(deliveries.map((d) => d.key)).size).toBe(deliveries.length);
    expect(json(await db.cli(['inspect', 'long', '--json'])).committed).toBe(long.step);
  });

  it('exits at once (130) on a second signal', async () => {
    const db = await freshDb();
    await db.cli([
      'start',
      'notify',
      '--id',
      'slow',
      '--input',
      JSON.stringify({ count: 2, outbox: 'outbox.jsonl', latencyMs: 30_000 }),
    ]);
    const worker = spawnCommand(process.execPath, [BIN, '--db', db.url, 'worker']);
    await until('the worker to take the run', () => runRow(db, 'slow')?.status === 'running');
    worker.kill('SIGINT');
    await until('the worker to start draining', () => worker.stderr().includes('draining'), { timeoutMs: 10_000 });
    worker.kill('SIGINT');
    const exit = await Promise.race([worker.exited, sleep(10_000).then(() => 'timeout' as const)]);
    expect(exit, worker.stderr()).toEqual({ code: 130, signal: null });
  });
});
