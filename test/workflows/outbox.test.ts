import { spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { Outbox, readOutbox } from '../../lib/engine/workflows/outbox';
import { LockTimeoutError } from '../../lib/errors';
import { type Child, finish, killHard, spawnCommand } from '../support/child';
import { tempDir } from '../support/tmp';
import type { OutboxChildArgs } from './outbox-child';

const FIXTURE = fileURLToPath(new URL('./outbox-child.ts', import.meta.url));
const spawnOutboxChild = (args: OutboxChildArgs): Child =>
  spawnCommand(process.execPath, ['--import', 'tsx', FIXTURE, JSON.stringify(args)]);

/** A pid that certainly belonged to a process and no longer does. */
function deadPid(): number {
  const pid = spawnSync(process.execPath, ['-e', '0']).pid;
  if (!pid) throw new Error('could not start a process');
  return pid;
}

describe('outbox in one process', () => {
  it('delivers a key once and records every later delivery as a duplicate', async () => {
    const path = tempDir().file('outbox.jsonl');
    const outbox = new Outbox(path);
    expect(await outbox.deliver({ key: 'a', step: 0, worker: 'w1' })).toMatchObject({
      key: 'a',
      step: 0,
      worker: 'w1',
      pid: process.pid,
      status: 'delivered',
    });
    expect(await outbox.deliver({ key: 'a', step: 0, worker: 'w1' })).toMatchObject({ status: 'duplicate' });
    // Another reader of the same file (another process, in effect) catches up from the file alone.
    const other = new Outbox(path);
    expect((await other.deliver({ key: 'a' })).status).toBe('duplicate');
    expect((await other.deliver({ key: 'b' })).status).toBe('delivered');
    expect((await outbox.deliver({ key: 'b' })).status).toBe('duplicate');
    const lines = readFileSync(path, 'utf8')
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => `${l.key}:${l.status}`)).toEqual([
      'a:delivered',
      'a:duplicate',
      'a:duplicate',
      'b:delivered',
      'b:duplicate',
    ]);
    expect(Object.keys(lines[0]).sort()).toEqual(['key', 'pid', 'status', 'step', 'time', 'worker']);
    const summary = readOutbox(path);
    expect(summary).toMatchObject({ delivered: 2, duplicates: 3, unreadable: 0 });
    expect([...summary.byKey]).toEqual([
      ['a', 1],
      ['b', 1],
    ]);
    expect(existsSync(`${path}.lock`)).toBe(false);
  });

  it('keeps its own line whole after a torn one, and starts over when the file is replaced', async () => {
    const dir = tempDir();
    const path = dir.file('outbox.jsonl');
    const outbox = new Outbox(path);
    await outbox.deliver({ key: 'a' });
    appendFileSync(path, '{"key":"b","sta'); // a writer killed mid-append
    expect((await outbox.deliver({ key: 'b' })).status).toBe('delivered');
    expect(readOutbox(path)).toMatchObject({ delivered: 2, duplicates: 0, unreadable: 1 });
    renameSync(path, dir.file('old.jsonl'));
    writeFileSync(path, `${JSON.stringify({ key: 'z', status: 'delivered' })}\n`);
    expect((await outbox.deliver({ key: 'a' })).status).toBe('delivered');
    expect((await outbox.deliver({ key: 'z' })).status).toBe('duplicate');
    expect(readOutbox(dir.file('missing.jsonl'))).toMatchObject({ delivered: 0, duplicates: 0, byKey: new Map() });
  });

  it('breaks a lock whose owner is gone, and waits out one whose owner lives', async () => {
    const dir = tempDir();
    const path = dir.file('outbox.jsonl');
    const dead = deadPid();
    writeFileSync(`${path}.lock`, `${dead}\n`);
    // The private file of a process killed while taking the lock.
    writeFileSync(`${path}.lock.${dead}.0badcafe`, `${dead}\n`);
    expect((await new Outbox(path).deliver({ key: 'a' })).status).toBe('delivered');
    expect(readdirSync(dir.path)).toEqual(['outbox.jsonl']);

    writeFileSync(`${path}.lock`, `${process.pid}\n`);
    const started = Date.now();
    const error = await new Outbox(path, { lockTimeoutMs: 200 }).deliver({ key: 'b' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockTimeoutError);
    expect((error as LockTimeoutError).transient).toBe(true);
    expect((error as Error).message).toMatch(new RegExp(`still held by live pid ${process.pid}`));
    expect(Date.now() - started).toBeGreaterThanOrEqual(200);
    expect(readOutbox(path).delivered).toBe(1);
  });
});

describe('outbox across processes', () => {
  it('4 processes delivering the same 500 keys at once: each key delivered exactly once', async () => {
    const path = tempDir().file('outbox.jsonl');
    const keys = Array.from({ length: 500 }, (_, n) => `run-x:step:${n}`);
    const children = Array.from({ length: 4 }, () => spawnOutboxChild({ outbox: path, keys }));
    await Promise.all(children.map((c) => c.waitForLine(/^READY/)));
    for (const child of children) child.send('GO');
    const reports = await Promise.all(children.map((c) => finish<{ delivered: number; duplicates: number }>(c)));

    expect(reports.reduce((n, r) => n + r.delivered, 0)).toBe(500);
    expect(reports.reduce((n, r) => n + r.duplicates, 0)).toBe(1500);
    const summary = readOutbox(path);
    expect(summary).toMatchObject({ delivered: 500, duplicates: 1500, unreadable: 0 });
    expect(summary.byKey.size).toBe(500);
    expect([...summary.byKey.values()].every((n) => n === 1)).toBe(true);
    expect(existsSync(`${path}.lock`)).toBe(false);
  });

  it('a process SIGKILLed holding the lock does not block the others: its stale lock is broken', async () => {
    const path = tempDir().file('outbox.jsonl');
    const keys = Array.from({ length: 50 }, (_, n) => `run-y:step:${n}`);
    const holder = spawnOutboxChild({ outbox: path, keys: [keys[0]!], blockAt: keys[0] });
    const others = [spawnOutboxChild({ outbox: path, keys }), spawnOutboxChild({ outbox: path, keys })];
    await Promise.all([holder, ...others].map((c) => c.waitForLine(/^READY/)));
    holder.send('GO');
    await holder.waitForLine(/^LOCKED /);
    expect(readFileSync(`${path}.lock`, 'utf8').trim()).toBe(String(holder.pid));

    for (const child of others) child.send('GO');
    await sleep(400);
    // Blocked behind a live owner: nothing delivered, nobody finished.
    expect(readOutbox(path).delivered).toBe(0);
    expect(others.every((c) => !c.lines.some((l) => l.startsWith('REPORT ')))).toBe(true);

    await killHard(holder);
    const reports = await Promise.all(others.map((c) => finish<{ delivered: number; duplicates: number }>(c)));
    expect(reports.reduce((n, r) => n + r.delivered, 0)).toBe(50);
    const summary = readOutbox(path);
    expect(summary).toMatchObject({ delivered: 50, duplicates: 50, unreadable: 0 });
    expect([...summary.byKey.values()].every((n) => n === 1)).toBe(true);
    expect(existsSync(`${path}.lock`)).toBe(false);
  });

  it('processes SIGKILLed at random instants and restarted: every key still delivered exactly once', async () => {
    const dir = tempDir();
    const path = dir.file('outbox.jsonl');
    const keys = Array.from({ length: 200 }, (_, n) => `run-z:step:${n}`);
    const start = async (): Promise<Child> => {
      const child = spawnOutboxChild({ outbox: path, keys });
      await child.waitForLine(/^READY/);
      child.send('GO');
      return child;
    };
    const live = await Promise.all([start(), start(), start()]);
    let kills = 0;
    while (kills < 6) {
      await sleep(50 + Math.random() * 150);
      const running = live.filter((c) => !c.lines.some((l) => l.startsWith('REPORT ')));
      if (running.length === 0) break;
      const victim = running[Math.floor(Math.random() * running.length)]!;
      await killHard(victim);
      kills++;
      live[live.indexOf(victim)] = await start();
    }
    await Promise.all(live.map((c) => finish(c)));
    const summary = readOutbox(path);
    expect(summary).toMatchObject({ delivered: 200, unreadable: 0 });
    expect(summary.byKey.size).toBe(200);
    expect([...summary.byKey.values()].every((n) => n === 1)).toBe(true);
    // Every killed process's lock was broken and its private files swept by the survivors.
    expect(readdirSync(dir.path)).toEqual(['outbox.jsonl']);
  });
});
