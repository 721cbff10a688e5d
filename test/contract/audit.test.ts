/**
 * The operators' log, on every backend: entries come back newest first with the store's time, pages continue
 * by id without gaps or repeats, and a run's entries can be read alone.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AuditStore } from '../../lib/store/types';
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
    const first = await store.recordAudit({ actor: 'alice (operator)', role: 'operator', action: 'pause', target: 'r1', runId: 'r1', detail: null });
    expect(first).toMatchObject({ actor: 'alice (operator)', role: 'operator', action: 'pause', target: 'r1', runId: 'r1', detail: null });
    expect(first.at).toBeGreaterThan(1_700_000_000);
    for (let i = 0; i < 24; i++) {
      await store.recordAudit({ actor: 'operator token (api)', role: 'operator', action: 'expire', target: `k${i}`, runId: i % 2 ? 'r2' : null, detail: `n=${i}` });
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

  it('keeps hostile text as it was given', async () => {
    const text = `<script>alert(1)</script>'; DROP TABLE audit; --`;
    await store.recordAudit({ actor: text, role: 'local', action: 'resolve', target: text, runId: text, detail: text });
    const [entry] = await store.listAudit({ runId: text });
    expect(entry).toMatchObject({ actor: text, target: text, runId: text, detail: text, role: 'local' });
    expect(await store.listAudit()).toHaveLength(1);
  });
});
