/**
 * WAYBILL_PRUNE_OLDER_THAN: the setting is parsed by lib/config (a day at least), and a worker given it
 * prunes finished runs older than the limit when it starts, logging what it removed, and keeps recent ones.
 * The old rows are written through a store whose clock stands 40 days back; the worker judges by this host's.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { runAgent } from '../../lib/checkpoint/agent';
import { Checkpoint } from '../../lib/checkpoint/checkpoint';
import { ManualClock } from '../../lib/clock';
import { parseConfig } from '../../lib/config';
import { createLogger } from '../../lib/engine/log';
import { Worker } from '../../lib/engine/worker';
import { WorkflowRegistry } from '../../lib/engine/workflow';
import { ConfigError } from '../../lib/errors';
import { openSqliteStore, type SqliteStore } from '../../lib/store/sqlite';
import { tempDir } from '../support/tmp';

const DAY_MS = 86_400_000;
let store: SqliteStore | undefined;
afterEach(async () => store?.close());

describe('WAYBILL_PRUNE_OLDER_THAN', () => {
  it('is a duration of at least a day, unset by default', () => {
    expect(parseConfig({}).WAYBILL_PRUNE_OLDER_THAN).toBeUndefined();
    expect(parseConfig({ WAYBILL_PRUNE_OLDER_THAN: '30d' }).WAYBILL_PRUNE_OLDER_THAN).toBe(30 * DAY_MS);
    expect(parseConfig({ WAYBILL_PRUNE_OLDER_THAN: '24h' }).WAYBILL_PRUNE_OLDER_THAN).toBe(DAY_MS);
    expect(() => parseConfig({ WAYBILL_PRUNE_OLDER_THAN: '23h' })).toThrow(
      new ConfigError(
        'invalid environment: WAYBILL_PRUNE_OLDER_THAN: must be at least 24h: a pruned idempotency key can no longer deduplicate a retry',
      ),
    );
    expect(() => parseConfig({ WAYBILL_PRUNE_OLDER_THAN: 'month' })).toThrow(
      /WAYBILL_PRUNE_OLDER_THAN: must be a whole number and a unit/,
    );
  });

  it('makes a worker prune old finished runs at start and log what it removed', async () => {
    const clock = new ManualClock(Date.now() - 40 * DAY_MS);
    store = openSqliteStore({ path: tempDir().file('w.db'), clock, synchronous: 'normal' });
    for (const id of ['old', 'recent']) {
      if (id === 'recent') clock.advance(39 * DAY_MS);
      await store.createRun({ id, workflow: 'w', inputJson: '{}', totalSteps: 2 });
      await store.claimRun({ workerId: 'wk', leaseMs: 60_000, workflows: ['w'] });
      await runAgent([0, 1], new Checkpoint(store, id, { workerId: 'wk' }), (x) => x);
      await store.finishRun(id, 'wk', { status: 'completed' });
    }
    const lines: Record<string, unknown>[] = [];
    const log = createLogger({}, (line) => lines.push(JSON.parse(line) as Record<string, unknown>), { pretty: false });
    const worker = new Worker({
      store,
      registry: new WorkflowRegistry(),
      id: 'pruner',
      log,
      pollMs: 10,
      prune: { olderThanMs: 30 * DAY_MS },
    });
    const running = worker.run();
    for (let i = 0; i < 600 && !lines.some((l) => l.msg === 'pruned finished runs'); i++) await sleep(50);
    worker.stop();
    await running;

    expect(lines.find((l) => l.msg === 'pruned finished runs')).toMatchObject({
      level: 'info',
      workerId: 'pruner',
      olderThanMs: 30 * DAY_MS,
      runs: 1,
      external: 0,
      committed: 2,
      events: 0,
      progress: 1,
    });
    expect(await store.getRun('old')).toBeNull();
    expect(await store.countCommitted('old')).toBe(0);
    expect(await store.countCommitted('recent')).toBe(2);
  });
});
