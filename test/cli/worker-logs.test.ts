/**
 * A worker process's log: on a pipe every stderr line is one JSON object, every line names the worker and
 * every step line the run, the step, the key and the attempt, so a log pipeline can follow one step across
 * workers. LOG_LEVEL says which lines: the run-level events at info, a line per step too at debug. On a terminal the
 * same lines are printed for a person (formatLine).
 */
import { describe, expect, it } from 'vitest';
import { formatLine } from '../../lib/engine/log-format';
import { spawnCommand } from '../support/child';
import { until } from '../support/until';
import { BIN, freshDb, json } from './support';

/** A notify run of three steps through a real worker process at LOG_LEVEL=level; its stderr lines, raw and parsed. */
async function workerLog(level: string): Promise<{ raw: string[]; lines: Record<string, unknown>[] }> {
  const db = await freshDb();
  await db.cli([
    'start',
    'notify',
    '--id',
    'logged',
    '--input',
    JSON.stringify({ count: 3, outbox: 'outbox.jsonl', latencyMs: 0 }),
  ]);
  const worker = spawnCommand(process.execPath, [BIN, '--db', db.url, 'worker', '--id', 'log-worker'], {
    env: { LOG_LEVEL: level },
  });
  await until(
    `the run to complete (${worker.stderr()})`,
    async () => json(await db.cli(['inspect', 'logged', '--json'])).run.status === 'completed',
    { intervalMs: 200 },
  );
  worker.kill('SIGTERM');
  expect(await worker.exited).toEqual({ code: 0, signal: null });
  const raw = worker.stderr().trimEnd().split('\n');
  return { raw, lines: raw.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

const count = (lines: Record<string, unknown>[], msg: string, level: string) =>
  lines.filter((l) => l.msg === msg && l.level === level).length;

describe('worker logs', () => {
  it('at LOG_LEVEL=info: the run-level events, no step lines, every line naming the worker once', async () => {
    const { raw, lines } = await workerLog('info');
    expect(
      lines.every((l) => typeof l.time === 'string' && typeof l.level === 'string' && typeof l.msg === 'string'),
    ).toBe(true);
    expect(new Set(lines.map((l) => l.level))).toEqual(new Set(['info']));
    expect(lines.filter((l) => String(l.msg).startsWith('step '))).toEqual([]);
    // The run's events, each once, in the same field names.
    for (const msg of ['worker started', 'serving workflows', 'worker stopped'])
      expect(count(lines, msg, 'info')).toBe(1);
    expect(lines.find((l) => l.msg === 'run started')).toMatchObject({
      level: 'info',
      runId: 'logged',
      workflow: 'notify',
      workerId: 'log-worker',
      attempt: 1,
    });
    expect(lines.filter((l) => l.msg === 'run completed')).toEqual([
      expect.objectContaining({ level: 'info', runId: 'logged', workflow: 'notify', workerId: 'log-worker' }),
    ]);
    // Bound once, never also passed: a name twice in one JSON object would be two values for one field.
    expect(lines.every((l) => l.workerId === 'log-worker')).toBe(true);
    expect(raw.filter((l) => l.split('"workerId"').length !== 2)).toEqual([]);
  });

  it('at LOG_LEVEL=debug: a line per step, with runId, step, key, attempt and workerId', async () => {
    const { raw, lines } = await workerLog('debug');
    const steps = lines.filter((l) => String(l.msg).startsWith('step '));
    expect(steps.map((l) => [l.level, l.msg, l.runId, l.step, l.key, l.attempt, l.workerId])).toEqual(
      [0, 1, 2].map((n) => ['debug', 'step executed', 'logged', n, `logged:step:${n}`, 1, 'log-worker']),
    );
    expect(count(lines, 'run started', 'info')).toBe(1);
    expect(count(lines, 'run completed', 'info')).toBe(1);
    expect(lines.every((l) => l.workerId === 'log-worker')).toBe(true);
    expect(raw.filter((l) => l.split('"workerId"').length !== 2 || l.split('"runId"').length > 2)).toEqual([]);
  });

  it('refuses a LOG_LEVEL pino does not have, naming the variable, before anything is opened', async () => {
    const db = await freshDb();
    const before = db.dump();
    const r = await db.cli(['worker'], { env: { LOG_LEVEL: 'loud' } });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('LOG_LEVEL: must be one of silent, fatal, error, warn, info, debug, trace');
    expect(db.dump()).toEqual(before);
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
