/**
 * What a takeover's `expired` event says of the holder it replaced, on every backend and both SQLite paths: a
 * lease that passed ("lease of W passed; taken over"), or a worker proven dead, whose claim markWorkerDead
 * expired at once ("worker W was declared dead; taken over"): its lease did not pass, the proof of its death
 * ended it. Only the holder and the attempt that died read so; the next holder of the same key, whose own lease
 * passes, reads as a lease again. And before anyone takes over, the claim's in-flight line (the step page,
 * `waybill step`, GET …/steps/:n: lib/control/steps.ts) tells the same two apart.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { attemptsOf } from '../../lib/control/steps';
import { eventText } from '../../lib/engine/attempt-note';
import type { ClaimRequest, Store } from '../../lib/store/contract';
import { type StoreHandle, stepBackends } from '../support/backends';

const list = await stepBackends();

const claim = (overrides: Partial<ClaimRequest>): ClaimRequest => ({
  idemKey: 'run-1:step:0',
  runId: 'run-1',
  token: randomUUID(),
  workerId: 'w1',
  step: 0,
  attempt: 1,
  leaseMs: 60_000,
  claimTtlMs: 30_000,
  ...overrides,
});

describe.each(list)('a takeover event on $label', (backend) => {
  let h: StoreHandle;
  let store: Store;

  beforeEach(async () => {
    h = await backend.open();
    store = h.store;
  });
  afterEach(() => h.close());

  /** The run's takeovers: who took over from whom, on which attempts, in the words stored and shown. */
  const takeovers = async () =>
    (await store.listEvents('run-1'))
      .filter((e) => e.previousAttempt !== null)
      .map((e) => [e.idemKey, e.workerId, e.attempt, e.previousWorkerId, e.previousAttempt, e.detail, eventText(e)]);

  it('says the lease passed when it did', async () => {
    await store.claim(claim({ leaseMs: 200 }));
    await h.elapse(600);
    expect(await store.claim(claim({ workerId: 'w2' }))).toMatchObject({
      kind: 'claimed',
      attempt: 2,
      tookOverFrom: { workerId: 'w1', attempt: 1 },
    });
    expect(await takeovers()).toEqual([
      [
        'run-1:step:0',
        'w2',
        2,
        'w1',
        1,
        'lease of w1 passed; taken over',
        'lease of w1 (attempt 1) passed; taken over by w2 (attempt 2)',
      ],
    ]);
  });

  it('says the worker was declared dead when its death expired the claim; its successor’s lease passes as a lease', async () => {
    await store.registerWorker({ id: 'w1', host: 'h', pid: 1 });
    await store.claim(claim({ attempt: 3 }));
    await store.claim(claim({ idemKey: 'run-1:step:1', step: 1 }));
    expect(await store.markWorkerDead('w1', 'pid 1 is gone on h')).toBe(2);

    expect(await store.claim(claim({ workerId: 'w2', leaseMs: 200 }))).toMatchObject({
      kind: 'claimed',
      attempt: 4,
      tookOverFrom: { workerId: 'w1', attempt: 3 },
    });
    await h.elapse(600);
    expect(await store.claim(claim({ workerId: 'w3' }))).toMatchObject({
      kind: 'claimed',
      attempt: 5,
      tookOverFrom: { workerId: 'w2', attempt: 4 },
    });
    expect(await store.claim(claim({ idemKey: 'run-1:step:1', step: 1, workerId: 'w3' }))).toMatchObject({
      kind: 'claimed',
      attempt: 2,
      tookOverFrom: { workerId: 'w1', attempt: 1 },
    });

    expect(await takeovers()).toEqual([
      [
        'run-1:step:0',
        'w2',
        4,
        'w1',
        3,
        'worker w1 was declared dead; taken over',
        'worker w1 (attempt 3) was declared dead; taken over by w2 (attempt 4)',
      ],
      [
        'run-1:step:0',
        'w3',
        5,
        'w2',
        4,
        'lease of w2 passed; taken over',
        'lease of w2 (attempt 4) passed; taken over by w3 (attempt 5)',
      ],
      [
        'run-1:step:1',
        'w3',
        2,
        'w1',
        1,
        'worker w1 was declared dead; taken over',
        'worker w1 (attempt 1) was declared dead; taken over by w3 (attempt 2)',
      ],
    ]);
  });

  it('says of a claim in flight that its worker was declared dead, or that its lease passed', async () => {
    await store.registerWorker({ id: 'w1', host: 'h', pid: 1 });
    await store.claim(claim({ attempt: 3 }));
    await store.claim(claim({ idemKey: 'run-1:step:1', step: 1, workerId: 'w2', leaseMs: 200 }));
    expect(await store.markWorkerDead('w1', 'pid 1 is gone on h')).toBe(1);
    /** The step's last attempt, read once its claim's lease has passed by the store's own times. */
    const inFlight = async (step: number) => {
      const record = await store.readStep('run-1', step);
      const last = attemptsOf(record, 30_000, record.claim!.leaseExpiresAt! + 1).at(-1)!;
      return [last.outcome, last.workerId, last.attempt, last.error];
    };
    expect(await inFlight(0)).toEqual([
      'in_flight',
      'w1',
      3,
      'worker w1 was declared dead: the next worker takes it over',
    ]);
    expect(await inFlight(1)).toEqual(['in_flight', 'w2', 1, 'its lease passed: the next worker takes it over']);

    // Its successor's claim, once its own lease passes, did not die.
    await store.claim(claim({ workerId: 'w3', leaseMs: 200 }));
    expect(await inFlight(0)).toEqual(['in_flight', 'w3', 4, 'its lease passed: the next worker takes it over']);
  });
});
