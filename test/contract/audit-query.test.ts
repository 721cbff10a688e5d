/**
 * listAudit's filters, on every backend: exact match on actor and action, the run, `since <= at < until` in
 * epoch seconds, all combined with the keyset cursor and newest first.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AuditEntry, Store } from '../../lib/store/contract';
import { backends, type StoreHandle } from '../support/backends';

const list = await backends();

describe.each(list)('audit query on $name', (backend) => {
  let h: StoreHandle;
  let store: Store;
  let entries: AuditEntry[];

  beforeEach(async () => {
    h = await backend.open();
    store = h.store;
    entries = [];
    const rows = [
      { actor: 'alice (operator)', action: 'pause', runId: 'r1' },
      { actor: 'cli:bob', action: 'cancel', runId: 'r1' },
      { actor: 'alice (operator)', action: 'cancel', runId: 'r2' },
      { actor: 'alice', action: 'pause', runId: 'r2' },
      { actor: 'cli:bob', action: 'sweep', runId: null },
      { actor: 'alice (operator)', action: 'pause', runId: 'r3' },
    ];
    for (const row of rows) {
      entries.push(await store.recordAudit({ ...row, role: 'operator', target: row.runId ?? '*', detail: null }));
      // Each entry at its own time, by the store's clock (SQLite: the manual clock moves; PostgreSQL: a short wait).
      await h.elapse(20);
    }
  });
  afterEach(() => h.close());

  const ids = (list: AuditEntry[]) => list.map((e) => e.id);

  it('matches actor and action exactly, newest first', async () => {
    expect(ids(await store.listAudit({ actor: 'alice (operator)' }))).toEqual(
      ids([entries[5]!, entries[2]!, entries[0]!]),
    );
    // Exact: no prefix or pattern match.
    expect(await store.listAudit({ actor: 'alice%' })).toEqual([]);
    expect(ids(await store.listAudit({ actor: 'alice' }))).toEqual([entries[3]!.id]);
    expect(ids(await store.listAudit({ action: 'cancel' }))).toEqual(ids([entries[2]!, entries[1]!]));
    expect(ids(await store.listAudit({ actor: 'alice (operator)', action: 'pause' }))).toEqual(
      ids([entries[5]!, entries[0]!]),
    );
    expect(ids(await store.listAudit({ action: 'pause', runId: 'r2' }))).toEqual([entries[3]!.id]);
  });

  it('takes since inclusive and until exclusive, in epoch seconds', async () => {
    const at = entries.map((e) => e.at);
    expect(new Set(at).size).toBe(6);
    expect(ids(await store.listAudit({ since: at[2]!, until: at[4]! }))).toEqual(ids([entries[3]!, entries[2]!]));
    expect(ids(await store.listAudit({ since: at[4]! }))).toEqual(ids([entries[5]!, entries[4]!]));
    expect(ids(await store.listAudit({ until: at[1]! }))).toEqual([entries[0]!.id]);
    expect(await store.listAudit({ since: at[3]!, until: at[3]! })).toEqual([]);
  });

  it('pages a filtered log by id without gaps or repeats', async () => {
    const first = await store.listAudit({ actor: 'alice (operator)', limit: 2 });
    expect(ids(first)).toEqual(ids([entries[5]!, entries[2]!]));
    const second = await store.listAudit({ actor: 'alice (operator)', limit: 2, beforeId: first[1]!.id });
    expect(ids(second)).toEqual([entries[0]!.id]);
    expect(second[0]).toEqual(entries[0]);
  });
});
