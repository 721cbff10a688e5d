/**
 * The operators' log, on every backend: entries come back newest first with the store's time, pages continue
 * by id without gaps or repeats, and a run's entries can be read alone.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AuditStore } from '../../lib/store/contract';
import { backends, type StoreHandle } from '../support/backends';

const list = await backends();

describe.each(list)('audit on $name', (backend) => {
  let h: StoreHandle;
  let store: AuditStore;

  beforeEach(async () => {
    h = await backend.open();
    store = h.store as unknown as AuditStore;
  });
  afterEach(() => h.close());

  it('records who did what to which run, and lists it newest first in keyset pages', async () => {
    const first = await store.recordAudit({
      actor: 'alice (operator)',
      role: 'operator',
      action: 'pause',
      target: 'r1',
      runId: 'r1',
      detail: null,
    });
    expect(first).toMatchObject({
      actor: 'alice (operator)',
      role: 'operator',
      action: 'pause',
      target: 'r1',
      runId: 'r1',
      detail: null,
    });
    expect(first.at).toBeGreaterThan(1_700_000_000);
    // A number on both backends (PostgreSQL's bigint came back as a string), so ids compare and page as numbers.
    expect(typeof first.id).toBe('number');
    for (let i = 0; i < 24; i++) {
      await store.recordAudit({
        actor: 'operator token (api)',
        role: 'operator',
        action: 'expire',
        target: `k${i}`,
        runId: i % 2 ? 'r2' : null,
        detail: `n=${i}`,
      });
    }

    const seen: number[] = [];
    let page = await store.listAudit({ limit: 10 });
    while (page.length) {
      seen.push(...page.map((e) => e.id));
      page = await store.listAudit({ limit: 10, beforeId: page[page.length - 1]!.id });
    }
    expect(seen).toHaveLength(25);
    expect([...seen].sort((a, b) => b - a)).toEqual(seen);
    expect(new Set(seen).size).toBe(25);
    expect(seen[24]).toBe(first.id);

    const r2 = await store.listAudit({ runId: 'r2', limit: 100 });
    expect(r2).toHaveLength(12);
    expect(r2.every((e) => e.runId === 'r2' && e.action === 'expire')).toBe(true);
    expect(r2[0]!.detail).toBe('n=23');
  });

  it('filters by actor, action, run and time exactly, newest first, and pages within a filter', async () => {
    const written = [];
    for (let i = 0; i < 12; i++) {
      written.push(
        await store.recordAudit({
          actor: i % 3 === 0 ? 'cli:ann' : 'olga (operator)',
          role: i % 3 === 0 ? 'local' : 'operator',
          action: i % 2 ? 'cancel' : 'expire',
          target: `t${i}`,
          runId: i < 6 ? 'r1' : 'r2',
          detail: null,
        }),
      );
    }
    const targets = (rows: { target: string }[]) => rows.map((r) => r.target);
    expect(targets(await store.listAudit({ actor: 'cli:ann' }))).toEqual(['t9', 't6', 't3', 't0']);
    // Exact, not a prefix or a pattern.
    expect(await store.listAudit({ actor: 'cli:' })).toEqual([]);
    expect(await store.listAudit({ actor: '%' })).toEqual([]);
    expect(targets(await store.listAudit({ action: 'cancel', runId: 'r2' }))).toEqual(['t11', 't9', 't7']);
    expect(targets(await store.listAudit({ actor: 'olga (operator)', action: 'expire', runId: 'r1' }))).toEqual([
      't4',
      't2',
    ]);

    // since <= at < until: an entry's own time is in a range that starts at it, not in one that ends at it.
    const at = written[5]!.at;
    const upTo = await store.listAudit({ until: at });
    const from = await store.listAudit({ since: at });
    expect(upTo.length + from.length).toBe(12);
    expect(from.map((e) => e.id)).toContain(written[5]!.id);
    expect(upTo.every((e) => e.at < at) && from.every((e) => e.at >= at)).toBe(true);
    expect(await store.listAudit({ since: at, until: at })).toEqual([]);

    // Pages of two within a filter: every match once, in order.
    const seen: string[] = [];
    let page = await store.listAudit({ runId: 'r1', limit: 2 });
    while (page.length) {
      seen.push(...targets(page));
      page = await store.listAudit({ runId: 'r1', limit: 2, beforeId: page.at(-1)!.id });
    }
    expect(seen).toEqual(['t5', 't4', 't3', 't2', 't1', 't0']);
  });

  it('keeps hostile text as it was given', async () => {
    const text = `<script>alert(1)</script>'; DROP TABLE audit; --`;
    await store.recordAudit({ actor: text, role: 'local', action: 'resolve', target: text, runId: text, detail: text });
    const [entry] = await store.listAudit({ runId: text });
    expect(entry).toMatchObject({ actor: text, target: text, runId: text, detail: text, role: 'local' });
    expect(await store.listAudit()).toHaveLength(1);
  });
});
