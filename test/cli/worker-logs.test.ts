/**
 * A worker process's log: on a pipe every stderr line is one JSON object, and every step line names the
 * run, the key and the worker, so a log pipeline can follow one step across workers. On a terminal the
 * same lines are printed for a person (formatLine).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { formatLine } from '../../lib/engine/log-format';
import { spawnCommand } from '../support/child';
import { BIN, freshDb, json } from './support';

describe('worker logs', () => {
  it('are JSON lines with runId, key and workerId on every step line', async () => {
    const db = await freshDb();
    await db.cli([
      'start',
      'notify',
      '--id',
      'logged',
      '--input',
      JSON.stringify({ count: 3, outbox: 'outbox.jsonl', latencyMs: 0 }),
    ]);
    const worker = spawnCommand(process.execPath, [BIN, '--db', db.url, 'worker', '--id', 'log-worker']);
    const deadline = Date.now() + 60_000;
    while (json(await db.cli(['inspect', 'logged', '--json'])).run.status !== 'completed') {
      if (Date.now() > deadline) throw new Error(`run did not complete: ${worker.stderr()}`);
      await sleep(200);
    }
    worker.kill('SIGTERM');
    expect(await worker.exited).toEqual({ code: 0, signal: null });

    const lines = worker
      .stderr()
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(
      lines.every((l) => typeof l.time === 'string' && typeof l.level === 'string' && typeof l.msg === 'string'),
    ).toBe(true);
    const steps = lines.filter((l) => String(l.msg).startsWith('step '));
    expect(steps.map((l) => [l.msg, l.runId, l.key, l.workerId])).toEqual(
      [0, 1, 2].map((n) => ['step executed', 'logged', `logged:step:${n}`, 'log-worker']),
    );
    expect(lines.find((l) => l.msg === 'run completed')).toMatchObject({
      level: 'info',
      runId: 'logged',
      workflow: 'notify',
      workerId: 'log-worker',
    });
  });

  it('reads as one plain line per entry on a terminal', () => {
    const line = JSON.stringify({
      level: 'warn',
      time: '2026-01-02T03:04:05.678Z',
      runId: 'r1',
      key: 'r1:step:0',
      error: 'timed out after 5s',
      msg: 'step failed; retrying',
    });
    expect(formatLine(line, false)).toBe(
      '03:04:05.678 WARN  step failed; retrying  runId=r1 key=r1:step:0 error="timed out after 5s"\n',
    );
    expect(formatLine('not json\n', false)).toBe('not json\n');
  });
});
