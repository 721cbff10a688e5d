/**
 * Workers as real processes SIGKILLed at random under a long notify run, on every backend. Counts come from the
 * store (committed rows) and from the notify outbox (the receiver's own record of deliveries).
 */
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { readOutbox } from '../../lib/engine/workflows/outbox';
import { runCli } from '../cli/support';
import { makeTarget, targetKinds } from '../support/targets';
import { tempDir } from '../support/tmp';
import { until } from '../support/until';
import { startWorker } from './support';

const kinds = await targetKinds('engine process tests');

describe.each(kinds)('workers on %s', (kind) => {
  it('a 2,000-step notify run survives 50 random SIGKILLs of its workers: each step committed once, delivered once', async () => {
    const target = await makeTarget(kind);
    // The workers' data directory holds the outbox; the run names it by its path inside.
    const data = tempDir('waybill-outbox-');
    const outbox = data.file('outbox.jsonl');
    const env = {
      WAYBILL_HEARTBEAT_MS: '100',
      WAYBILL_RUN_LEASE_MS: '5000',
      WAYBILL_LEASE_MS: '5000',
      WAYBILL_DATA_DIR: data.path,
    };
    const input = JSON.stringify({ count: 2000, outbox: 'outbox.jsonl', latencyMs: 4 });
    const started = await runCli(['start', 'notify', '--id', 'chaos', '--input', input], {
      env: { DATABASE_URL: target.url, WAYBILL_SQLITE_SYNC: 'normal' },
    });
    expect(started.code, started.stderr).toBe(0);
    const store = await target.store();

    const killed = new Set<string>();
    const slots = [0, 1].map((slot) => ({
      id: `w${slot}-0`,
      child: startWorker(target, ['--id', `w${slot}-0`], env).child,
    }));
    let generation = 0;
    while (killed.size < 50) {
      await sleep(60 + Math.random() * 140);
      if ((await store.getRun('chaos'))?.status === 'completed') break;
      const slot = slots[Math.floor(Math.random() * 2)]!;
      slot.child.kill('SIGKILL');
      await once(slot.child, 'exit');
      killed.add(slot.id);
      slot.id = `w${slots.indexOf(slot)}-${++generation}`;
      slot.child = startWorker(target, ['--id', slot.id], env).child;
    }
    await until('the run to complete', async () => (await store.getRun('chaos'))?.status === 'completed', {
      progress: async () => (await store.loadProgress('chaos'))?.step ?? 0,
    });

    expect(killed.size).toBe(50);
    const committed = await store.listCommitted('chaos', { limit: 5000 });
    expect(committed.length).toBe(2000);
    expect(new Set(committed.map((c) => c.step)).size).toBe(2000);
    const mail = readOutbox(outbox);
    expect(mail.delivered).toBe(2000);
    expect(mail.byKey.size).toBe(2000);
    expect([...mail.byKey.values()].every((n) => n === 1)).toBe(true);
    // An execution beyond 2,000 happens only when a kill lands between a delivery and its commit: the
    // refused duplicate's original delivery must then be by a worker that was killed.
    expect(mail.duplicates).toBeLessThanOrEqual(killed.size);
    const lines = readFileSync(outbox, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { key: string; worker: string; status: string });
    const duplicateKeys = new Set(lines.filter((l) => l.status === 'duplicate').map((l) => l.key));
    for (const line of lines) {
      if (line.status === 'delivered' && duplicateKeys.has(line.key)) expect(killed.has(line.worker)).toBe(true);
    }
    const progress = await store.loadProgress('chaos');
    expect(progress?.step).toBe(2000);
    // 50 worker restarts, each a new Node process, on 2 shared cores: only the counts decide the test; the
    // limit only stops a hang.
  }, 420_000);
});
