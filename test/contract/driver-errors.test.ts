/**
 * A query made through Drizzle's query builder fails with the driver's own error, on every backend: Drizzle
 * wraps it in DrizzleQueryError, whose message carries the statement's parameters (user data, for a log or a
 * 500) and whose `code` is hidden on its cause, where the store's busy and transient mapping would miss it.
 */
import { DrizzleQueryError } from 'drizzle-orm';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Store } from '../../lib/store/contract';
import { backends, type StoreHandle } from '../support/backends';

const list = await backends();

describe.each(list)('driver errors on $name', (backend) => {
  let h: StoreHandle;
  let store: Store;

  beforeEach(async () => {
    h = await backend.open();
    store = await h.reopen();
  });
  afterEach(() => h.close());

  it('a read through the query builder on a closed store throws the driver error, no statement text or parameters', async () => {
    await store.recordAudit({
      actor: 'secret-actor',
      role: 'local',
      action: 'pause',
      target: 'r1',
      runId: 'r1',
      detail: null,
    });
    await store.close();
    const failures = await Promise.all([
      store.listAudit({ actor: 'secret-actor' }).then(
        () => null,
        (error: unknown) => error,
      ),
      store.listWorkers().then(
        () => null,
        (error: unknown) => error,
      ),
      store.getRun('secret-run').then(
        () => null,
        (error: unknown) => error,
      ),
    ]);
    expect(failures.map((error) => error instanceof Error)).toEqual([true, true, true]);
    for (const error of failures as Error[]) {
      expect(error).not.toBeInstanceOf(DrizzleQueryError);
      expect(error.message).not.toContain('Failed query');
      expect(error.message).not.toContain('secret');
    }
  });
});
