/**
 * A run's budget in the store (RunStore.createRun and setRunBudget), on every backend: set at creation or later,
 * read back in getRun, filled only when unset, and an unknown run refused with nothing written.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { NotFoundError } from '../../lib/errors';
import { backends, type StoreHandle } from '../support/backends';

const list = await backends();

const newRun = (id: string, budgetUsd?: number | null) => ({
  id,
  workflow: 'wf',
  inputJson: '{}',
  totalSteps: 2,
  ...(budgetUsd === undefined ? {} : { budgetUsd }),
});

describe.each(list)('run budgets on $name', (backend) => {
  let h: StoreHandle;

  beforeEach(async () => {
    h = await backend.open();
  });
  afterEach(() => h.close());

  it('keeps a budget given at creation, and none when none is given', async () => {
    expect((await h.store.createRun(newRun('b1', 0.25))).budgetUsd).toBe(0.25);
    expect((await h.store.createRun(newRun('b2'))).budgetUsd).toBeNull();
    expect((await h.store.getRun('b1'))?.budgetUsd).toBe(0.25);
    expect((await h.store.getRun('b2'))?.budgetUsd).toBeNull();
  });

  it('sets a budget, and read back in getRun; ifUnset fills only a run that has none', async () => {
    await h.store.createRun(newRun('b1'));
    expect((await h.store.setRunBudget('b1', 1.5, { ifUnset: true })).budgetUsd).toBe(1.5);
    expect((await h.store.setRunBudget('b1', 9, { ifUnset: true })).budgetUsd).toBe(1.5);
    expect((await h.store.getRun('b1'))?.budgetUsd).toBe(1.5);
    expect((await h.store.setRunBudget('b1', 2.75)).budgetUsd).toBe(2.75);
    expect((await h.store.getRun('b1'))?.budgetUsd).toBe(2.75);
    expect((await h.store.getRun('b1'))?.status).toBe('queued');
  });

  it('refuses an unknown run with NotFoundError and creates nothing', async () => {
    await expect(h.store.setRunBudget('nope', 1)).rejects.toBeInstanceOf(NotFoundError);
    await expect(h.store.setRunBudget('nope', 1, { ifUnset: true })).rejects.toBeInstanceOf(NotFoundError);
    expect(await h.store.getRun('nope')).toBeNull();
  });
});
