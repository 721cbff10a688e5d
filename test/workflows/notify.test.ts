import { existsSync, mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { stepKey } from '../../lib/checkpoint/keys';
import { builtinRegistry, type Delivery, outboxAt, readOutbox, resolveOutbox } from '../../lib/engine/workflows';
import { InvalidInputError } from '../../lib/errors';
import { tempDir } from '../support/tmp';
import { openTestStore, runToEnd } from './harness';

describe('notify through a worker', () => {
  it('delivers one notification per step; a resend after a lost commit is refused as a duplicate', async () => {
    const { store, dir } = openTestStore();
    const outbox = dir.file('outbox.jsonl');
    // Step 3 was delivered by a worker that died before committing: the receiver has the key already.
    await outboxAt(outbox).deliver({ key: stepKey('notify-1', 3), step: 3, worker: 'dead-worker' });

    const run = await runToEnd(
      store,
      builtinRegistry({ dataDir: dir.path }),
      { workflow: 'notify', id: 'notify-1', input: { count: 25, outbox: 'outbox.jsonl', latencyMs: 1 } },
      { id: 'worker-a' },
    );
    expect(run).toMatchObject({ status: 'completed', totalSteps: 25 });
    expect(JSON.parse(run.outputJson!)).toMatchObject({ processed: 25, executed: 25, skipped: 0 });

    const summary = readOutbox(outbox);
    expect(summary).toMatchObject({ delivered: 25, duplicates: 1, unreadable: 0 });
    expect([...summary.byKey.values()].every((n) => n === 1)).toBe(true);

    const results = (await store.listCommitted('notify-1')).map((row) => JSON.parse(row.resultJson) as Delivery);
    expect(results).toHaveLength(25);
    for (const result of results) {
      expect(result).toMatchObject({ key: stepKey('notify-1', result.step!), worker: 'worker-a', pid: process.pid });
      expect(result.status).toBe(result.step === 3 ? 'duplicate' : 'delivered');
    }
  });

  it('a second run over the same outbox delivers its own keys', async () => {
    const { store, dir } = openTestStore();
    const outbox = dir.file('outbox.jsonl');
    const registry = builtinRegistry({ dataDir: dir.path });
    await runToEnd(store, registry, { workflow: 'notify', id: 'n-a', input: { count: 5, outbox: 'outbox.jsonl' } });
    await runToEnd(store, registry, { workflow: 'notify', id: 'n-b', input: { count: 5, outbox: 'outbox.jsonl' } });
    expect(readOutbox(outbox)).toMatchObject({ delivered: 10, duplicates: 0 });
  });
});

describe('notify outbox inside the data directory', () => {
  it('resolves a relative path inside the data directory, creating its folders', () => {
    const dir = tempDir();
    expect(resolveOutbox(dir.path, 'outboxes/demo.jsonl')).toBe(join(dir.path, 'outboxes', 'demo.jsonl'));
    expect(existsSync(join(dir.path, 'outboxes'))).toBe(true);
  });

  it('refuses absolute paths and .. escapes before touching the disk, naming input.outbox', () => {
    const dir = tempDir();
    for (const outbox of ['/etc/passwd', '../escape.jsonl', 'a/../../escape.jsonl']) {
      expect(() => resolveOutbox(dir.path, outbox)).toThrow(InvalidInputError);
      expect(() => resolveOutbox(dir.path, outbox)).toThrow(/^input\.outbox: /);
    }
    expect(existsSync(join(dir.path, 'a'))).toBe(false);
  });

  it('refuses a symbolic link inside the data directory that leads out of it', () => {
    const data = tempDir();
    const elsewhere = tempDir();
    symlinkSync(elsewhere.path, join(data.path, 'link'));
    symlinkSync(join(elsewhere.path, 'target.jsonl'), join(data.path, 'file.jsonl'));
    expect(() => resolveOutbox(data.path, 'link/out.jsonl')).toThrow(
      /^input\.outbox: "link\/out\.jsonl" leads out of the data directory/,
    );
    expect(() => resolveOutbox(data.path, 'file.jsonl')).toThrow(/leads out of the data directory/);
    // No folder is made through the link before the refusal.
    expect(() => resolveOutbox(data.path, 'link/made/out.jsonl')).toThrow(/leads out of the data directory/);
    expect(existsSync(join(elsewhere.path, 'made'))).toBe(false);
  });

  it('a run whose stored input names a path outside (written around the schema) delivers nothing there', async () => {
    const { store, dir } = openTestStore();
    const outside = tempDir();
    mkdirSync(join(dir.path, 'data'));
    symlinkSync(outside.path, join(dir.path, 'data', 'out'));
    const run = await runToEnd(store, builtinRegistry({ dataDir: join(dir.path, 'data') }), {
      workflow: 'notify',
      id: 'escape',
      input: { count: 3, outbox: 'out/x.jsonl' },
    });
    expect(run.status).toBe('failed');
    expect(run.error).toMatch(/input\.outbox: .*leads out of the data directory/);
    expect(existsSync(join(outside.path, 'x.jsonl'))).toBe(false);
    expect(await store.countCommitted('escape')).toBe(0);
  });
});
