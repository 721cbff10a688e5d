/**
 * A TypeScript step knows when it is in doubt, as the Python client's does: its claim took the key over from
 * a holder whose lease ran out mid-execute (that holder may have done the side effect without committing).
 * A first claim, a claim of a key the holder gave back, and the caller's own retry are not in doubt.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Checkpoint } from '../../lib/checkpoint/checkpoint';
import type { StepContext } from '../../lib/checkpoint/step-call';
import { type StoreHandle, stepBackends } from '../support/backends';
import { claimRequest } from '../support/requests';

const LEASE_MS = 200;
const list = await stepBackends();

describe.each(list)('a step in doubt on $label', (backend) => {
  let h: StoreHandle;
  const seen: Pick<StepContext, 'attempt' | 'inDoubt'>[] = [];
  const checkpoint = () =>
    new Checkpoint(h.store, 'run', { workerId: 'w2', leaseMs: LEASE_MS, clock: h.clock, pollMs: { min: 10, max: 20 } });
  const look = (ctx: StepContext) => {
    seen.push({ attempt: ctx.attempt, inDoubt: ctx.inDoubt });
    return 'done';
  };

  beforeEach(async () => {
    h = await backend.open();
    seen.length = 0;
  });
  afterEach(() => h.close());

  it('is not in doubt on a first claim, nor on a key its holder gave back', async () => {
    expect((await h.settle(checkpoint().runOnce('k0', look, { step: 0 }))).status).toBe('executed');
    const held = claimRequest('k1', { step: 1, leaseMs: LEASE_MS });
    await h.store.claim(held);
    await h.store.releaseClaim({
      idemKey: 'k1',
      token: held.token,
      runId: 'run',
      step: 1,
      workerId: 'w1',
      durationMs: 1,
      error: null,
    });
    expect((await h.settle(checkpoint().runOnce('k1', look, { step: 1 }))).status).toBe('executed');
    expect(seen).toEqual([
      { attempt: 1, inDoubt: false },
      { attempt: 1, inDoubt: false },
    ]);
  });

  it('is in doubt, on attempt 2, after taking over a holder whose lease ran out, and a replay runs nothing', async () => {
    await h.store.claim(claimRequest('k2', { step: 2, workerId: 'w1', leaseMs: LEASE_MS }));
    await h.elapse(LEASE_MS * 5);
    expect((await h.settle(checkpoint().runOnce('k2', look, { step: 2 }))).status).toBe('executed');
    expect((await h.settle(checkpoint().runOnce('k2', look, { step: 2 }))).status).toBe('skipped');
    expect(seen).toEqual([{ attempt: 2, inDoubt: true }]);
  });

  it("is not in doubt on the caller's own retry of a step that threw", async () => {
    let calls = 0;
    const flaky = (ctx: StepContext) => {
      seen.push({ attempt: ctx.attempt, inDoubt: ctx.inDoubt });
      if (++calls === 1) throw new Error('upstream 503');
      return 'done';
    };
    await expect(h.settle(checkpoint().runOnce('k3', flaky, { step: 3 }))).rejects.toThrow('upstream 503');
    expect((await h.settle(checkpoint().runOnce('k3', flaky, { step: 3, attempt: 2 }))).status).toBe('executed');
    expect(seen).toEqual([
      { attempt: 1, inDoubt: false },
      { attempt: 2, inDoubt: false },
    ]);
  });
});
