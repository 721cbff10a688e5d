/**
 * A child started after its parent was cancelled. The parent's worker may be inside the step that starts the
 * child when the cancel lands: the cancel's cascade found no child yet, and the child was then made queued and ran,
 * its parent cancelled. An attached child of a cancelled parent is now made cancelled, with an event saying why; a
 * detached one is started as ever. On PostgreSQL a cancel still in flight is waited for.
 */
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RunStore, Store } from '../../lib/store/contract';
import { openPostgresStore } from '../../lib/store/postgres/index';
import { backends, type StoreHandle } from '../support/backends';
import { postgresAvailable, TEST_DATABASE_URL, testSchema } from '../support/postgres';

const list = await backends();
const pgHere = await postgresAvailable('child start under a cancel');

describe.each(list)('a child started after its parent’s cancel on $name', (backend) => {
  let h: StoreHandle;
  let store: Store & RunStore;

  beforeEach(async () => {
    h = await backend.open();
    store = h.store as Store & RunStore;
  });
  afterEach(() => h.close());

  it('is made cancelled when attached, and started when detached', async () => {
    await store.createRun({ id: 'p', workflow: 'w', inputJson: '{}', totalSteps: null });
    await store.actOnRun('p', 'cancel', 'alice (operator)');
    const attached = await store.createRun({
      id: 'p:a',
      workflow: 'w',
      inputJson: '{}',
      totalSteps: null,
      parentRunId: 'p',
    });
    const detached = await store.createRun({
      id: 'p:d',
      workflow: 'w',
      inputJson: '{}',
      totalSteps: null,
      parentRunId: 'p',
      detached: true,
    });
    expect([attached.status, attached.finishedAt !== null, detached.status]).toEqual(['cancelled', true, 'queued']);
    expect((await store.listEvents('p:a')).map((e) => [e.outcome, e.detail])).toEqual([
      ['operator', 'cancelled as it was started: its parent p had been cancelled'],
    ]);
    expect(await store.listEvents('p:d')).toEqual([]);
  });
});

describe.runIf(pgHere)('a child started while its parent’s cancel is in flight on PostgreSQL', () => {
  it('waits for the cancel and is made cancelled', async () => {
    const schema = await testSchema('wb_child_cancel');
    const store = await openPostgresStore({ url: TEST_DATABASE_URL, schema: schema.name });
    const canceller = new pg.Client({ connectionString: TEST_DATABASE_URL, options: `-c search_path=${schema.name}` });
    await canceller.connect();
    try {
      await store.createRun({ id: 'p', workflow: 'w', inputJson: '{}', totalSteps: null });
      await canceller.query('BEGIN');
      await canceller.query(`UPDATE runs SET status = 'cancelled' WHERE id = 'p'`);
      let settled = false;
      const child = store
        .createRun({ id: 'p:a', workflow: 'w', inputJson: '{}', totalSteps: null, parentRunId: 'p' })
        .finally(() => {
          settled = true;
        });
      // The start waits for the parent's row: it is not made while the cancel is open.
      const lockWaits = async () =>
        (
          await canceller.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND application_name = 'waybill'`,
          )
        ).rows[0]!.n;
      while ((await lockWaits()) === 0 && !settled) await new Promise((resolve) => setTimeout(resolve, 5));
      expect(settled).toBe(false);
      await canceller.query('COMMIT');
      expect((await child).status).toBe('cancelled');
    } finally {
      await canceller.end();
      await store.close();
    }
  });
});
