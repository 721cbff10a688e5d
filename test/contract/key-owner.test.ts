/**
 * A key is one run's (lib/store/shared/key-owner.ts). The attack it closes: a sandbox wrote a step of another run under
 * its own run id (`acme` committing `acme:nightly:step:0`), and the other run's worker then skipped that step
 * with the forged result, or waited a whole lease on the forged claim. Now the victim's claim is refused with a
 * clear error and writes nothing, on every store path: claim alone, and the next key claimed in a commit.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { KeyOfAnotherRunError } from '../../lib/errors';
import type { ClaimRequest, Store } from '../../lib/store/contract';
import { type StoreHandle, stepBackends } from '../support/backends';

const list = await stepBackends();

describe.each(list)('a key of another run on $label', (backend) => {
  let h: StoreHandle;
  let store: Store;
  beforeEach(async () => {
    h = await backend.open();
    store = h.store;
  });
  afterEach(async () => {
    await h.close();
  });

  const request = (runId: string, idemKey: string): ClaimRequest => ({
    idemKey,
    runId,
    token: randomUUID(),
    workerId: `w-${runId}`,
    step: 0,
    attempt: 1,
    leaseMs: 60_000,
    claimTtlMs: 60_000,
  });
  const forge = async (idemKey: string, commit: boolean) => {
    const forged = request('acme', idemKey);
    expect((await store.claim(forged)).kind).toBe('claimed');
    if (commit)
      await store.commit({
        idemKey,
        token: forged.token,
        runId: 'acme',
        resultJson: '"forged"',
        step: 0,
        fingerprint: null,
        workerId: 'w-acme',
        durationMs: 1,
      });
  };
  const rows = async () => ({
    committed: (await store.listCommitted('acme:nightly')).length,
    claims: (await store.listClaims({ runId: 'acme:nightly', claimTtlMs: 60_000 })).length,
  });

  it("is not skipped with the other run's committed result: the claim is refused and writes nothing", async () => {
    await forge('acme:nightly:step:0', true);
    const claim = store.claim(request('acme:nightly', 'acme:nightly:step:0'));
    await expect(claim).rejects.toBeInstanceOf(KeyOfAnotherRunError);
    await expect(claim).rejects.toMatchObject({
      code: 'CONFLICT',
      message:
        'key acme:nightly:step:0 is committed by run acme, not by run acme:nightly: a key belongs to one run; nothing was written',
    });
    expect(await rows()).toEqual({ committed: 0, claims: 0 });
    expect((await store.getCommitted('acme:nightly:step:0'))?.resultJson).toBe('"forged"');
  });

  it("is not waited on while the other run's claim lives: refused at once", async () => {
    await forge('acme:nightly:step:1', false);
    await expect(store.claim(request('acme:nightly', 'acme:nightly:step:1'))).rejects.toThrow(
      'key acme:nightly:step:1 is claimed by run acme, not by run acme:nightly',
    );
    expect(await rows()).toEqual({ committed: 0, claims: 0 });
  });

  it('is not claimed ahead by a commit: the commit stands, its next is null, and claiming it then is refused', async () => {
    await forge('acme:nightly:step:1', true);
    const own = request('acme:nightly', 'acme:nightly:step:0');
    expect((await store.claim(own)).kind).toBe('claimed');
    const next = { ...request('acme:nightly', 'acme:nightly:step:1'), step: 1 };
    const outcome = await store.commit({
      idemKey: own.idemKey,
      token: own.token,
      runId: own.runId,
      resultJson: '"real"',
      step: 0,
      fingerprint: null,
      workerId: own.workerId,
      durationMs: 1,
      next,
    });
    expect(outcome.next).toBeNull();
    expect(await rows()).toEqual({ committed: 1, claims: 0 });
    await expect(store.claim(next)).rejects.toBeInstanceOf(KeyOfAnotherRunError);
  });

  it("a run's footprint counts its keys, committed and claimed, and the UTF-8 bytes it holds", async () => {
    await forge('acme:step:0', true);
    await forge('acme:step:1', false);
    await store.saveProgress({ runId: 'acme', step: 1, stateJson: '"é"', executed: 0, skipped: 0, awaited: 0 });
    // '"forged"' is 8 bytes, '"é"' 4.
    expect(await store.runFootprint('acme')).toEqual({ keys: 2, bytes: 12 });
    expect(await store.runFootprint('nobody')).toEqual({ keys: 0, bytes: 0 });
  });

  it('its own run claims, skips and waits as before', async () => {
    const first = request('acme:nightly', 'acme:nightly:step:0');
    expect((await store.claim(first)).kind).toBe('claimed');
    expect((await store.claim(request('acme:nightly', 'acme:nightly:step:0'))).kind).toBe('held');
  });
});
