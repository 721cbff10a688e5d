/**
 * A command workflow's run log (lib/engine/run-log.ts) on a real directory: one file per run inside
 * run-logs/ whatever the run id holds, the last lines read back in order, and the file bounded.
 */
import { readdirSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { describe, expect, it } from 'vitest';
import { appendRunLog, runLogPath, tailRunLog } from '../../lib/engine/run-log';
import { tempDir } from '../support/tmp';

describe('run logs', () => {
  it('keep each run in its own file inside run-logs/, whatever its id holds', () => {
    const dir = tempDir('waybill-run-log-');
    for (const id of ['a/b', '..', 'x:y@z', '.'])
      expect(dirname(runLogPath(dir.path, id))).toBe(`${dir.path}/run-logs`);
    expect(runLogPath(dir.path, 'a/b')).toBe(`${dir.path}/run-logs/a%2fb.log`);
    appendRunLog(dir.path, 'a/b', 'stdout', 'one');
    appendRunLog(dir.path, 'a', 'stdout', 'other run');
    expect(readdirSync(`${dir.path}/run-logs`).sort()).toEqual(['a%2fb.log', 'a.log']);
  });

  it('read back the last lines, oldest first, one line per call however the text breaks', () => {
    const dir = tempDir('waybill-run-log-');
    expect(tailRunLog(dir.path, 'r')).toEqual([]);
    for (let i = 0; i < 30; i++) appendRunLog(dir.path, 'r', i % 2 ? 'stderr' : 'stdout', `line ${i}`);
    appendRunLog(dir.path, 'r', 'worker', 'two\nlines');
    const tail = tailRunLog(dir.path, 'r', 3);
    expect(tail.map((l) => [l.stream, l.text])).toEqual([
      ['stdout', 'line 28'],
      ['stderr', 'line 29'],
      ['worker', 'two lines'],
    ]);
    expect(tail.every((l) => Number.isFinite(l.at) && l.at > 1.7e9)).toBe(true);
  });

  it('stay under a megabyte: past it only the newer half is kept, from a whole line', () => {
    const dir = tempDir('waybill-run-log-');
    const text = 'x'.repeat(3000);
    for (let i = 0; i < 400; i++) appendRunLog(dir.path, 'big', 'stdout', `${i} ${text}`);
    expect(statSync(runLogPath(dir.path, 'big')).size).toBeLessThanOrEqual(1024 * 1024);
    const tail = tailRunLog(dir.path, 'big', 1000);
    expect(tail.at(-1)!.text.startsWith('399 ')).toBe(true);
    // The 64 KiB tail starts mid-line; the cut line is dropped, so every line read is whole.
    expect(tail.every((l) => /^\d+ x{3000}$/.test(l.text))).toBe(true);
  });
});
