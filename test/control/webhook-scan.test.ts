/**
 * The alert scan on every backend: a run the stall judge calls stalled and a claim in doubt past a webhook's own
 * threshold are written to the outbox once each, however often the scan runs; a webhook whose threshold has not
 * passed gets nothing yet, and nothing is read or written while no webhook subscribes.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { scanAlerts } from '../../lib/control/webhooks';
import type { Store } from '../../lib/store/contract';
import { backends, type StoreHandle } from '../support/backends';

const list = await backends();

describe.each(list)('the alert scan on $name', (backend) => {
  let h: StoreHandle;
  let store: Store;

  beforeEach(async () => {
    h = await backend.open();
    store = h.store;
  });
  afterEach(() => h.close());

  const scan = () => scanAlerts(store, { now: h.clock.now(), runLeaseMs: 30_000, heartbeatMs: 1000, claimTtlMs: 1000 });
  const hook = (id: string, events: ('run.stalled' | 'claim.in_doubt')[], inDoubtSeconds = 60) =>
    store.createWebhook({ id, url: `http://127.0.0.1:9/${id}`, events, secret: `whsec_${id}`, inDoubtSeconds });

  it('writes a stalled run once per execution, however often it scans', async () => {
    await store.createRun({ id: 'lonely', workflow: 'nobody-serves', inputJson: '{}', totalSteps: 1 });
    expect(await scan()).toBe(0);
    await hook('ops', ['run.stalled']);
    expect(await scan()).toBe(1);
    expect(await scan()).toBe(0);
    const [row] = await store.listDeliveries();
    expect(row).toMatchObject({ id: 'ops:run.stalled:lonely:0', event: 'run.stalled', runId: 'lonely' });
    expect(JSON.parse(row!.payloadJson).data).toMatchObject({ reason: 'no-live-worker', workflow: 'nobody-serves' });
  });

  it('writes a claim in doubt to each webhook once its own threshold has passed, once', async () => {
    await hook('quick', ['claim.in_doubt'], 60);
    await hook('patient', ['claim.in_doubt'], 3600);
    await h.insertOutsideClaim('charge-1', 'r1');
    expect(await scan()).toBe(0);
    await h.elapse(120_000);
    expect(await scan()).toBe(1);
    expect(await scan()).toBe(0);
    const rows = await store.listDeliveries();
    expect(rows.map((d) => [d.webhookId, d.event, d.runId])).toEqual([['quick', 'claim.in_doubt', 'r1']]);
    expect(JSON.parse(rows[0]!.payloadJson).data).toMatchObject({ key: 'charge-1', runId: 'r1' });
    await h.elapse(3600_000);
    expect(await scan()).toBe(1);
    expect((await store.listDeliveries()).map((d) => d.webhookId).sort()).toEqual(['patient', 'quick']);
  });
});
