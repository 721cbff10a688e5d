/**
 * lib/control itself, on every backend: the decision is made in the operation (a viewer is refused by each
 * one, before anything is written or even read), and the audit log's reader filters and pages exactly.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { audit, type Caller, type ControlDeps, type ControlStore, claims, retention, runs } from '../../lib/control';
import { defineWorkflow, WorkflowRegistry } from '../../lib/engine/workflow';
import { ControlInputError, ForbiddenError } from '../../lib/errors';
import { backends, type StoreHandle } from '../support/backends';

const list = await backends();

const OPERATOR: Caller = { actor: 'olga (operator)', role: 'operator', channel: 'dashboard' };
const VIEWER: Caller = { actor: 'vera (viewer)', role: 'viewer', channel: 'api' };
const CLI: Caller = { actor: 'cli:ann', role: 'local', channel: 'cli' };

const echo = defineWorkflow({
  name: 'echo',
  input: z.strictObject({ n: z.number().int() }),
  totalSteps: 1,
  async run() {},
});

describe.each(list)('lib/control on $name', (backend) => {
  let h: StoreHandle;
  let store: ControlStore;
  let opened: number;
  let deps: ControlDeps;

  beforeEach(async () => {
    h = await backend.open();
    store = h.store;
    opened = 0;
    deps = {
      store: async () => {
        opened++;
        return store;
      },
      claimTtlMs: 30_000,
      maxBytes: 1000,
      workflows: async () => new WorkflowRegistry([echo]),
    };
  });
  afterEach(() => h.close());

  it('refuses a viewer in every operation before the store is even opened', async () => {
    await store.createRun({ id: 'r1', workflow: 'echo', inputJson: '{"n":1}', totalSteps: 1 });
    await h.insertOutsideClaim('k1', 'r1');
    const attempts: [string, () => Promise<unknown>][] = [
      ['start', () => runs.start(deps, VIEWER, { workflow: 'echo', input: { n: 1 }, id: 'r2' })],
      ...(['pause', 'resume', 'cancel', 'retry'] as const).map(
        (action) => [action, () => runs.act(deps, VIEWER, { action, runId: 'r1' })] as [string, () => Promise<unknown>],
      ),
      ['budget', () => runs.budget(deps, VIEWER, { runId: 'r1', budgetUsd: 5 })],
      ['expire', () => claims.expire(deps, VIEWER, { key: 'k1', force: true })],
      ['resolve', () => claims.resolve(deps, VIEWER, { key: 'k1', result: 1, force: true })],
      ['sweep', () => claims.sweep(deps, VIEWER, {})],
      [
        'prune',
        () => retention.prune(deps, VIEWER, { olderThan: '1s', force: true }, { nowMs: Date.now() + 86_400_000 }),
      ],
    ];
    for (const [name, attempt] of attempts) {
      const error = await attempt().then(
        () => null,
        (e: unknown) => e,
      );
      expect(error, name).toBeInstanceOf(ForbiddenError);
      expect((error as ForbiddenError).code, name).toBe('FORBIDDEN');
    }
    expect(opened).toBe(0);
    expect(await store.getRun('r1')).toMatchObject({ status: 'queued' });
    expect(await store.getRun('r2')).toBeNull();
    expect((await store.listClaims({ claimTtlMs: 30_000 })).map((c) => c.idemKey)).toEqual(['k1']);
    expect(await store.listAudit()).toEqual([]);
    // Reading the log is a viewer's right.
    expect(await audit.list(deps, VIEWER, {})).toEqual({ entries: [], next: null });
  });

  it('refuses bad input naming the field, before the store is opened', async () => {
    const cases: [() => Promise<unknown>, Record<string, string[]>][] = [
      [
        () => runs.act(deps, OPERATOR, { action: 'explode' as 'pause', runId: 'r1' }),
        { action: ['must be one of pause, resume, cancel, retry'] },
      ],
      [
        () => runs.act(deps, OPERATOR, { action: 'cancel', runId: 'r1', reason: 'x'.repeat(501) }),
        { reason: ['at most 500 characters'] },
      ],
      [
        () => runs.start(deps, OPERATOR, { workflow: 'echo', input: {}, id: 'has space' }),
        { id: ['letters, digits and . _ : - only, starting with a letter or digit'] },
      ],
      [
        () => runs.start(deps, OPERATOR, { workflow: 'echo', input: {}, budgetUsd: 0 }),
        { budgetUsd: ['must be more than 0 US dollars'] },
      ],
      [
        () => runs.budget(deps, OPERATOR, { runId: 'r1', budgetUsd: Number.NaN }),
        { budgetUsd: ['must be a number of US dollars'] },
      ],
      [
        () => runs.budget(deps, OPERATOR, { runId: 'r1', budgetUsd: 2_000_000 }),
        { budgetUsd: ['must be at most 1000000 US dollars'] },
      ],
      [() => claims.expire(deps, OPERATOR, { key: '' }), { key: ['must not be empty'] }],
      [
        () => claims.resolve(deps, OPERATOR, { key: 'k', result: 'x'.repeat(2000) }),
        { result: ['is 2,002 bytes: the limit is 1,000 bytes (WAYBILL_MAX_BODY_BYTES)'] },
      ],
      [() => claims.sweep(deps, OPERATOR, { reason: 'a\u0000b' }), { reason: ['must not contain control characters'] }],
      [
        () => retention.prune(deps, CLI, { olderThan: '30' }, { nowMs: 0 }),
        { olderThan: ['must be a whole number and a unit: s, m, h, d or w (e.g. 30d)'] },
      ],
      [
        () => retention.prune(deps, CLI, { olderThan: '2h' }, { nowMs: 0 }),
        {
          olderThan: [
            '2h is under 24h, and a pruned idempotency key can no longer deduplicate a retry (--force to prune anyway)',
          ],
        },
      ],
      [
        () => audit.list(deps, VIEWER, { action: 'delete' as 'start' }),
        {
          action: [
            'must be one of start, pause, resume, cancel, retry, expire, resolve, sweep, prune, token, rerun, fork, approve, reject, signal, budget, schedule-add, schedule-pause, schedule-resume, schedule-delete, emit, webhook-add, webhook-pause, webhook-resume, webhook-delete, webhook-resend',
          ],
        },
      ],
      [() => audit.list(deps, VIEWER, { since: 20, until: 10 }), { until: ['must not be before since'] }],
      [() => audit.list(deps, VIEWER, { limit: 501 }), { limit: ['must be at most 500'] }],
      // NUL cannot reach PostgreSQL's text (a 500 there): refused by name on every backend.
      [() => audit.list(deps, VIEWER, { actor: 'a\u0000b' }), { actor: ['must not contain NUL characters'] }],
      [
        () => runs.act(deps, OPERATOR, { action: 'pause', runId: 'r\u0000' }),
        { runId: ['must not contain spaces or control characters'] },
      ],
      [() => claims.sweep(deps, OPERATOR, { runId: '' }), { runId: ['must not be empty'] }],
    ];
    for (const [attempt, fields] of cases) {
      const error = await attempt().then(
        () => null,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(ControlInputError);
      expect((error as ControlInputError).fields).toEqual(fields);
    }
    expect(opened).toBe(0);
    // A start whose input does not fit is refused after the catalog was read, and writes nothing.
    await expect(runs.start(deps, OPERATOR, { workflow: 'echo', input: { n: 'one' } })).rejects.toMatchObject({
      fields: { 'input.n': [expect.any(String)] },
    });
    await expect(runs.start(deps, OPERATOR, { workflow: 'nope' })).rejects.toMatchObject({
      fields: { workflow: ['unknown workflow "nope" (known: echo)'] },
    });
    expect(await store.listRuns({ claimTtlMs: 30_000 })).toEqual([]);
    expect(await store.listAudit()).toEqual([]);
  });

  it("says how to force a live claim in the words of the caller's channel, and writes nothing", async () => {
    await store.claim({
      idemKey: 'live',
      runId: 'r',
      token: 't',
      workerId: 'w',
      step: 0,
      attempt: 1,
      leaseMs: 60_000,
      claimTtlMs: 30_000,
    });
    const messages = [];
    for (const channel of ['api', 'cli', 'dashboard'] as const) {
      messages.push(
        await claims.expire(deps, { ...OPERATOR, channel }, { key: 'live' }).catch((e: Error) => e.message),
      );
    }
    expect(messages).toEqual([
      'the claim on live has a live lease (its holder may be executing it): expire only claims whose side effect is in doubt, or send "force": true',
      'the claim on live has a live lease (its holder may be executing it): expire only claims whose side effect is in doubt, or --force',
      'the claim on live has a live lease (its holder may be executing it): expire only claims whose side effect is in doubt, or force',
    ]);
    expect(await store.listAudit()).toEqual([]);
    expect(await store.listEvents('r')).toEqual([]);
  });

  it('reads the log with exact filters and keyset pages, newest first', async () => {
    for (let i = 0; i < 7; i++)
      await store.createRun({ id: `r${i}`, workflow: 'echo', inputJson: '{"n":1}', totalSteps: 1 });
    for (let i = 0; i < 7; i++)
      await runs.act(deps, i % 2 ? CLI : OPERATOR, { action: i < 4 ? 'pause' : 'cancel', runId: `r${i}` });
    const all = await audit.list(deps, VIEWER, { limit: 500 });
    expect(all.entries.map((e) => e.target)).toEqual(['r6', 'r5', 'r4', 'r3', 'r2', 'r1', 'r0']);
    expect(all.next).toBeNull();

    const cli = await audit.list(deps, VIEWER, { actor: 'cli:ann' });
    expect(cli.entries.map((e) => [e.target, e.role])).toEqual([
      ['r5', 'local'],
      ['r3', 'local'],
      ['r1', 'local'],
    ]);
    expect(
      (await audit.list(deps, VIEWER, { actor: 'olga (operator)', action: 'cancel' })).entries.map((e) => e.target),
    ).toEqual(['r6', 'r4']);
    expect((await audit.list(deps, VIEWER, { runId: 'r2' })).entries.map((e) => e.action)).toEqual(['pause']);
    expect((await audit.list(deps, VIEWER, { actor: 'cli' })).entries).toEqual([]);

    const pages: string[][] = [];
    let before: number | undefined;
    do {
      const page = await audit.list(deps, VIEWER, { limit: 3, before });
      pages.push(page.entries.map((e) => e.target));
      before = page.next ?? undefined;
    } while (before !== undefined);
    expect(pages).toEqual([['r6', 'r5', 'r4'], ['r3', 'r2', 'r1'], ['r0']]);

    const at = all.entries.at(-1)!.at;
    const after = await audit.list(deps, VIEWER, { since: at + 3600 });
    expect(after.entries).toEqual([]);
    expect((await audit.list(deps, VIEWER, { since: at - 1, until: at + 3600 })).entries).toHaveLength(7);
    expect((await audit.list(deps, VIEWER, { until: at })).entries).toHaveLength(0);
  });
});
