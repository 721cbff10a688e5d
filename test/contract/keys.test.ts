/**
 * Keys that are not valid UTF-16 (an unpaired surrogate) have no UTF-8 form: PostgreSQL stored
 * `report-\ud83d` and `report-\ud83c` as one key (the second came back "skipped" with the first's result, its
 * side effect never run) and SQLite read them back garbled. Checkpoint.runOnce refuses them as the HTTP API
 * does, with the same rule (keyProblem), before anything is written.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { idemKey } from '../../lib/api/ids';
import { Checkpoint } from '../../lib/checkpoint/checkpoint';
import { keyProblem } from '../../lib/checkpoint/keys';
import { InvalidInputError } from '../../lib/errors';
import type { InsightStore, Store } from '../../lib/store/contract';
import { backends, type StoreHandle } from '../support/backends';

const list = await backends();

describe.each(list)('idempotency keys on $name', (backend) => {
  let h: StoreHandle;
  let store: Store & InsightStore;

  beforeEach(async () => {
    h = await backend.open();
    store = h.store as Store & InsightStore;
  });
  afterEach(() => h.close());

  const nothingWritten = async () => {
    expect(await store.listCommitted('run')).toEqual([]);
    expect(await store.listClaims({ claimTtlMs: 60_000 })).toEqual([]);
    expect(await store.listEvents('run')).toEqual([]);
    expect(await store.loadProgress('run')).toBeNull();
  };

  it('refuses keys with an unpaired surrogate, naming the key; nothing runs, nothing is written', async () => {
    const cp = new Checkpoint(store, 'run', { workerId: 'w' });
    let executed = 0;
    for (const key of ['report-\ud83d', 'report-\ud83c', '\udc00report']) {
      const error = await cp
        .runOnce(key, () => ++executed, { step: 0, progress: { step: 1, state: {} } })
        .then(
          () => null,
          (e: unknown) => e,
        );
      expect(error).toBeInstanceOf(InvalidInputError);
      expect((error as InvalidInputError).code).toBe('INVALID_INPUT');
      expect((error as Error).message).toBe(
        `idempotency key ${JSON.stringify(key)} must not contain an unpaired surrogate ` +
          '(it is not valid UTF-16, so it has no UTF-8 form to store); nothing was written',
      );
    }
    // The next key, claimed in the same commit, is held to the rule too.
    await expect(cp.runOnce('report-ok', () => ++executed, { next: { idemKey: 'report-\ud83d' } })).rejects.toThrow(
      /next idempotency key "report-\\ud83d"/,
    );
    expect(executed).toBe(0);
    await nothingWritten();
  });

  it('refuses empty, overlong and control-character keys the same way the HTTP API does', async () => {
    const cp = new Checkpoint(store, 'run');
    // Beside printable ASCII's two ends (0x20, 0x7e, kept): 0x1f and 0x7f (DEL), and a control past ASCII (0x85).
    for (const key of [
      '',
      'k'.repeat(513),
      'a\u0000b',
      'a\nb',
      'a\u001fb',
      'a\u007fb',
      'a\u0085b',
      'a\u200bb',
      'a\ud800b',
    ]) {
      await expect(cp.runOnce(key, () => 1)).rejects.toBeInstanceOf(InvalidInputError);
      const api = idemKey.safeParse(key);
      expect(api.success).toBe(false);
      expect(api.error?.issues[0]?.message).toBe(keyProblem(key));
    }
    await nothingWritten();
    expect(keyProblem(' run ~ step:7 ')).toBeNull();
    expect(keyProblem('rapport-café')).toBeNull();
  });

  it('keeps keys that differ in a paired surrogate (an emoji) apart, each executed once and read back whole', async () => {
    const cp = new Checkpoint(store, 'run');
    const grin = 'report-\ud83d\ude00';
    const fire = 'report-\ud83d\udd25';
    expect(await cp.runOnce(grin, () => 'grin')).toEqual({ result: 'grin', status: 'executed' });
    expect(await cp.runOnce(fire, () => 'fire')).toEqual({ result: 'fire', status: 'executed' });
    expect(await cp.runOnce(grin, () => 'again')).toEqual({ result: 'grin', status: 'skipped' });
    expect((await store.listCommitted('run')).map((c) => c.idemKey).sort()).toEqual([grin, fire].sort());
  });
});
