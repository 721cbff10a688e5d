/**
 * `waybill logs` as a process, its lines written into the store by another connection (as a worker on another
 * machine writes them): the newest lines, a page after a seq, --json as the API's page; an unknown run is
 * exit 1; and --follow prints each new line as it is stored, then exits 0 once the run ends (NDJSON under
 * --json). Its bad flags are in bad-input.test.ts.
 */
import { describe, expect, it } from 'vitest';
import type { RunLogInput } from '../../lib/store/contract';
import { openSqliteStore } from '../../lib/store/sqlite';
import { spawnCommand } from '../support/child';
import { BIN, freshDb, json } from './support';

const AT = Date.UTC(2026, 0, 2, 10, 0, 0) / 1000;
const line = (runId: string, n: number, stream: RunLogInput['stream'] = 'stdout'): RunLogInput => ({
  runId,
  at: AT + n,
  stream,
  line: `line ${n}`,
  workerId: 'w1',
  attempt: 1,
});

describe('waybill logs', () => {
  it('prints the newest lines, or a page after a seq; --json is the API page; an unknown run is exit 1', async () => {
    const db = await freshDb();
    const store = openSqliteStore({ path: db.url.slice('file:'.length), synchronous: 'normal' });
    try {
      await store.createRun({ id: 'r1', workflow: 'chatty', inputJson: '{}', totalSteps: null });
      await store.createRun({ id: 'quiet', workflow: 'chatty', inputJson: '{}', totalSteps: null });
      await store.appendRunLogs(
        Array.from({ length: 150 }, (_, i) => line('r1', i + 1, i === 0 ? 'worker' : i === 1 ? 'stderr' : 'stdout')),
        { keep: 2000 },
      );
    } finally {
      await store.close();
    }

    const tail = await db.cli(['logs', 'r1']);
    expect(tail).toMatchObject({ code: 0, stderr: '' });
    const printed = tail.stdout.trimEnd().split('\n');
    expect(printed).toHaveLength(100);
    expect(printed[0]).toBe('2026-01-02T10:00:51.000Z  stdout  line 51');
    expect(printed.at(-1)).toBe('2026-01-02T10:02:30.000Z  stdout  line 150');

    const first = await db.cli(['logs', 'r1', '--after', '0', '--limit', '2']);
    expect(first.stdout).toBe('2026-01-02T10:00:01.000Z  worker  line 1\n2026-01-02T10:00:02.000Z  stderr  line 2\n');
    const page = json(await db.cli(['logs', 'r1', '--after', '140', '--json']));
    expect(page).toMatchObject({ runId: 'r1', next: 150, more: false });
    expect(page.lines).toHaveLength(10);
    expect(page.lines[0]).toEqual({
      seq: 141,
      at: AT + 141,
      stream: 'stdout',
      line: 'line 141',
      workerId: 'w1',
      attempt: 1,
    });
    expect(json(await db.cli(['logs', 'r1', '--after', '0', '--limit', '149', '--json']))).toMatchObject({
      next: 149,
      more: true,
    });

    expect(await db.cli(['logs', 'quiet'])).toEqual({
      code: 0,
      stdout: '',
      stderr: 'waybill logs: run quiet has no log lines\n',
    });
    expect(await db.cli(['logs', 'nope'])).toEqual({
      code: 1,
      stdout: '',
      stderr: 'waybill logs: run nope not found\n',
    });
  });

  it('--follow prints each line as it is stored and exits 0 once the run has ended', async () => {
    const db = await freshDb();
    const store = openSqliteStore({ path: db.url.slice('file:'.length), synchronous: 'normal' });
    try {
      await store.createRun({ id: 'live', workflow: 'chatty', inputJson: '{}', totalSteps: null });
      await store.appendRunLogs([line('live', 1)], { keep: 2000 });
      const follow = (extra: string[]) =>
        spawnCommand(process.execPath, [BIN, '--db', db.url, 'logs', 'live', '--follow', ...extra]);
      const text = follow([]);
      const ndjson = follow(['--json']);
      await text.waitForLine(/line 1$/);
      await ndjson.waitForLine(/"line":"line 1"/);
      // A worker elsewhere writes more; the followers print it without being asked again.
      await store.appendRunLogs([line('live', 2), line('live', 3, 'stderr')], { keep: 2000 });
      await text.waitForLine(/stderr {2}line 3$/);
      await ndjson.waitForLine(/"line":"line 3"/);
      // The run ends: its worker stored its last line first, and the followers print it, then stop.
      expect((await store.claimRun({ workerId: 'w1', leaseMs: 60_000, workflows: ['chatty'] }))?.id).toBe('live');
      await store.appendRunLogs([line('live', 4, 'worker')], { keep: 2000 });
      expect(await store.finishRun('live', 'w1', { status: 'completed', outputJson: '{}' })).toBe(true);
      expect(await text.exited).toEqual({ code: 0, signal: null });
      expect(await ndjson.exited).toEqual({ code: 0, signal: null });
      expect(text.lines).toEqual([
        '2026-01-02T10:00:01.000Z  stdout  line 1',
        '2026-01-02T10:00:02.000Z  stdout  line 2',
        '2026-01-02T10:00:03.000Z  stderr  line 3',
        '2026-01-02T10:00:04.000Z  worker  line 4',
      ]);
      expect(text.stderr()).toBe('waybill logs: run live completed\n');
      expect(ndjson.lines.map((l) => JSON.parse(l))).toEqual(
        [1, 2, 3, 4].map((n) => ({
          runId: 'live',
          seq: n,
          at: AT + n,
          stream: n === 3 ? 'stderr' : n === 4 ? 'worker' : 'stdout',
          line: `line ${n}`,
          workerId: 'w1',
          attempt: 1,
        })),
      );
      expect(ndjson.stderr()).toBe('');
    } finally {
      await store.close();
    }
  });
});
