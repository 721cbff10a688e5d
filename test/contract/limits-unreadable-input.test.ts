/**
 * A run's stored input that PostgreSQL's jsonb cannot read: a NUL escape (`\u0000`) or an unpaired surrogate escape
 * anywhere in it (rows stored before lib/domain/text.ts refused them at the start, or written by another client).
 * The limits' key is read from the input at every pick, so such a row failed every pick of its workflow (22P05,
 * 22P02) and held up every run of it, on PostgreSQL alone; a text that is no JSON at all failed SQLite's too. Now,
 * on both backends, the key is limitKeyOf's wherever JSON.parse reads the input (the NUL run is held under acme like
 * any acme run, and holds acme's place once running), `""` where it does not (on PostgreSQL, for a text holding a
 * `\u` escape: postgres/functions/limit-key.ts says why no other), and the pick, the held run's reason and its place
 * in a rate key's line go on. Rows are written with raw SQL, as an older store or an outside client left them.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { queuedReasonOf } from '../../lib/control/queued';
import { readStallFacts } from '../../lib/control/stalled';
import { limitKeyOf, type RunLimits } from '../../lib/domain/run-limits';
import type { Store } from '../../lib/store/contract';
import { backends, type StoreHandle } from '../support/backends';

const list = await backends();
const LEASE = 600_000;

/** Inputs as the text column holds them: JSON escapes, written into SQL literals as they are. */
const NUL_ACME = String.raw`{"customer":"acme","note":"\u0000"}`;
const SURROGATE_GAMMA = String.raw`{"customer":"gamma","note":"\ud800"}`;
/** Cut short: no JSON, with a NUL escape in it. */
const NOT_JSON = String.raw`{"customer":"acme","note":"\u0000"`;

describe.each(list)('limits over an input PostgreSQL cannot read, on $name', (backend) => {
  let h: StoreHandle;
  let store: Store;
  /** A queued run of `workflow` whose stored input is `text`, exactly. */
  const queue = async (id: string, workflow: string, text: string) => {
    await store.createRun({ id, workflow, inputJson: '{}', totalSteps: 1 });
    await h.exec(`UPDATE runs SET input_json = '${text.replaceAll("'", "''")}' WHERE id = '${id}'`);
  };
  const pick = async (workflow: string, limits: RunLimits) =>
    (await store.claimRun({ workerId: 'w-1', leaseMs: LEASE, workflows: [workflow], limits: { [workflow]: limits } }))
      ?.id ?? null;
  const picks = async (count: number, workflow: string, limits: RunLimits) => {
    const taken: (string | null)[] = [];
    for (let i = 0; i < count; i++) taken.push(await pick(workflow, limits));
    return taken;
  };
  /** A live worker with free slots serving `workflow` under `limits`, so only the limits hold a run back. */
  const serve = async (workflow: string, limits: RunLimits) => {
    await store.registerWorker({ id: 'w-1', host: 'h', pid: 1, slots: 100 });
    await store.publishWorkflows('w-1', [
      { name: workflow, description: null, inputSchemaJson: '{}', totalSteps: 1, version: null, limits },
    ]);
    await store.heartbeatWorker('w-1');
  };
  const reason = async (id: string) =>
    queuedReasonOf(
      store,
      (await store.getRun(id))!,
      await readStallFacts(store, { now: h.clock.now(), runLeaseMs: LEASE, heartbeatMs: 60_000 }),
    );

  beforeEach(async () => {
    h = await backend.open();
    store = h.store;
  });
  afterEach(() => h.close());

  it('reads the concurrency key past a NUL or a lone surrogate elsewhere in the input, and holds by it', async () => {
    const limits: RunLimits = { concurrency: { limit: 1, key: 'customer' } };
    await serve('wf', limits);
    await queue('wf-1', 'wf', '{"customer":"acme"}');
    await queue('wf-2', 'wf', NUL_ACME);
    await queue('wf-3', 'wf', '{"customer":"acme"}');
    await queue('wf-4', 'wf', '{"customer":"beta"}');
    await queue('wf-5', 'wf', SURROGATE_GAMMA);
    // acme's one place goes to wf-1; the NUL run is acme's and waits as wf-3 does; beta and gamma have their own.
    expect(await picks(4, 'wf', limits)).toEqual(['wf-1', 'wf-4', 'wf-5', null]);
    expect(await store.limitUse('wf-2', limits)).toEqual({
      nowS: expect.any(Number),
      concurrency: { key: 'acme', running: 1 },
      rateLimit: undefined,
      rateLine: null,
      placeLine: null,
    });
    expect(await reason('wf-2')).toEqual({
      kind: 'held',
      workflow: 'wf',
      limit: 'concurrency',
      key: 'acme',
      message: '1 of 1 runs for key acme are running',
    });
    // When wf-1 ends the NUL run, first in line, takes acme's place, and holds it while it runs.
    expect(await store.finishRun('wf-1', 'w-1', { status: 'completed' })).toBe(true);
    expect(await picks(2, 'wf', limits)).toEqual(['wf-2', null]);
    expect((await store.limitUse('wf-3', limits))?.concurrency).toEqual({ key: 'acme', running: 1 });
  });

  it('counts a NUL run under its rate key, as a start and in the line', async () => {
    const limits: RunLimits = { rateLimit: { limit: 1, periodMs: 60_000, key: 'provider' } };
    await serve('rated', limits);
    await queue('rated-1', 'rated', String.raw`{"provider":"openai","note":"\u0000"}`);
    await queue('rated-2', 'rated', '{"provider":"openai"}');
    await queue('rated-3', 'rated', String.raw`{"provider":"anthropic","note":"\udc00"}`);
    await queue('rated-4', 'rated', String.raw`{"provider":"openai","note":"\u0000"}`);
    // The NUL run starts first and takes openai's one start of the minute; anthropic has its own.
    expect(await picks(3, 'rated', limits)).toEqual(['rated-1', 'rated-3', null]);
    // rated-4 waits behind rated-2 for openai's next slot: its key read from its input, its line from theirs.
    const use = await store.limitUse('rated-4', limits);
    expect(use?.rateLimit).toEqual({ key: 'openai', started: 1, oldestAt: expect.any(Number) });
    expect(use?.rateLine).toMatchObject({ place: 2, atLeast: false });
    expect(await reason('rated-4')).toMatchObject({ kind: 'held', limit: 'rate', key: 'openai', place: 2 });
  });

  it('gives an input no JSON parser reads the key "", as limitKeyOf does, and picks on', async () => {
    const limits: RunLimits = { concurrency: { limit: 1, key: 'customer' } };
    await queue('wf-1', 'wf', NOT_JSON);
    await queue('wf-2', 'wf', '{"customer":"acme"}');
    await queue('wf-3', 'wf', '{}');
    expect(limitKeyOf(NOT_JSON, 'customer')).toBe('');
    expect((await store.limitUse('wf-1', limits))?.concurrency).toEqual({ key: '', running: 0 });
    // The unreadable run stands under "", with the runs that have no customer.
    expect(await picks(3, 'wf', limits)).toEqual(['wf-1', 'wf-2', null]);
    expect((await store.limitUse('wf-3', limits))?.concurrency).toEqual({ key: '', running: 1 });
  });

  it('reads the key as limitKeyOf does past escapes elsewhere, escaped backslashes and pairs among them', async () => {
    const inputs = [
      String.raw`{"note":"\ud800\u0000","customer":"acme"}`,
      String.raw`{"note":"\ud800\\\udc00","customer":"acme"}`,
      String.raw`{"note":"\\ud800\udc00","customer":"acme"}`,
      String.raw`{"note":"\uDC00\uD800","customer":"acme"}`,
      String.raw`{"note":"\\u0000","customer":"acme"}`,
      String.raw`{"note":"a\\\\\u0000","customer":"acme"}`,
      String.raw`{"customer":"\ud83d\ude00","note":"\u0000"}`,
      String.raw`{"customer":"o'brien","note":"\u0000"}`,
      String.raw`{"customer":5,"note":"\u0000"}`,
      String.raw`{"customer":true,"note":"\udfff"}`,
      String.raw`{"customer":{"id":"\u0000"}}`,
      String.raw`["\u0000"]`,
    ];
    const limits: RunLimits = { concurrency: { limit: 1, key: 'customer' } };
    for (const [i, text] of inputs.entries()) {
      await queue(`wf-${i}`, 'wf', text);
      const use = await store.limitUse(`wf-${i}`, limits);
      expect(use?.concurrency?.key, text).toBe(limitKeyOf(text, 'customer'));
    }
  });

  it('keeps the key when the escape is in it: U+FFFD on PostgreSQL, whose text holds no NUL', async () => {
    const limits: RunLimits = { concurrency: { limit: 1, key: 'customer' } };
    await queue('wf-1', 'wf', String.raw`{"customer":"ac\u0000me"}`);
    await queue('wf-2', 'wf', String.raw`{"customer":"\ud83d\ude00","note":"\ud800"}`);
    const nul = backend.name === 'postgres' ? 'ac\ufffdme' : 'ac\u0000me';
    expect((await store.limitUse('wf-1', limits))?.concurrency?.key).toBe(nul);
    // A surrogate pair is one character, kept; only an unpaired one is unreadable.
    expect((await store.limitUse('wf-2', limits))?.concurrency?.key).toBe('\u{1f600}');
    expect(await picks(3, 'wf', limits)).toEqual(['wf-1', 'wf-2', null]);
  });
});
