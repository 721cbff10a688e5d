/**
 * Every operator operation through its three ways in — the dashboard's server action, the API's route handler
 * and the `waybill` CLI as a real process — on one real store (a SQLite file, or a PostgreSQL schema): each
 * makes the same change and the same audit row (the same action, target, run and detail; only who differs),
 * a viewer is refused by each and nothing changes, and bad input changes nothing.
 *
 * Used by test/control/channels.sqlite.test.ts and channels.postgres.test.ts, which set DATABASE_URL before
 * importing it: the server's store and configuration are read from the environment, as in production.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Principal } from '../../lib/auth/principal';
import { ManualClock } from '../../lib/clock';
import type { AuditStore, RunStore, Store } from '../../lib/store/contract';
import { openStore } from '../../lib/store/index';
import { type Result, runCli } from '../cli/support';

export const OPERATOR_TOKEN = 'operator-token-control-0123456789';
export const VIEWER_TOKEN = 'viewer-token-control-0123456789ab';

/** The principal the dashboard's actions see (lib/auth/server's requireAction is the one seam). */
export const session: { who: Principal } = { who: { actor: 'olga (operator)', role: 'operator' } };
export const VIEWER: Principal = { actor: 'vera (viewer)', role: 'viewer' };
const OLGA: Principal = { actor: 'olga (operator)', role: 'operator' };

vi.mock('@/lib/auth/server', async (actual) => ({
  ...(await actual<object>()),
  requireAction: async () => session.who,
}));
vi.mock('next/cache', () => ({ revalidatePath: () => undefined }));

type FullStore = Store & RunStore & AuditStore;

/**
 * `exec`: SQL as another client writes it (`?` placeholders). `dump`: every table's rows, in a stable order:
 * equal dumps mean nothing was written.
 */
export interface Target {
  url: string;
  exec(sql: string, params?: unknown[]): Promise<void>;
  dump(): Promise<Record<string, unknown[]>>;
  close(): Promise<void>;
}

export function channelSuite(name: string, makeTarget: () => Promise<Target>) {
  describe(`one operation, three ways in, on ${name}`, () => {
    let target: Target;
    let store: FullStore;
    let actions: typeof import('../../app/actions/runs') & typeof import('../../app/actions/claims');
    let routes: {
      runs: typeof import('../../app/api/v1/runs/route');
      act: typeof import('../../app/api/v1/runs/[id]/[action]/route');
      expire: typeof import('../../app/api/v1/claims/expire/route');
      resolve: typeof import('../../app/api/v1/claims/resolve/route');
      sweep: typeof import('../../app/api/v1/claims/sweep/route');
    };

    beforeAll(async () => {
      target = await makeTarget();
      process.env.DATABASE_URL = target.url;
      process.env.WAYBILL_OPERATOR_TOKEN = OPERATOR_TOKEN;
      process.env.WAYBILL_VIEWER_TOKEN = VIEWER_TOKEN;
      process.env.WAYBILL_SESSION_SECRET = 'control-test-session-secret-0123456789';
      process.env.WAYBILL_CLAIM_TTL_MS = '30000';
      // What `next build` sets for experimental.authInterrupts: forbidden() throws its 403 digest.
      process.env.__NEXT_EXPERIMENTAL_AUTH_INTERRUPTS = '1';
      actions = { ...(await import('../../app/actions/runs')), ...(await import('../../app/actions/claims')) };
      routes = {
        runs: await import('../../app/api/v1/runs/route'),
        act: await import('../../app/api/v1/runs/[id]/[action]/route'),
        expire: await import('../../app/api/v1/claims/expire/route'),
        resolve: await import('../../app/api/v1/claims/resolve/route'),
        sweep: await import('../../app/api/v1/claims/sweep/route'),
      };
      store = (await openStore(target.url)) as FullStore;
    }, 60_000);

    afterAll(async () => {
      await store?.close();
      const server = await (globalThis as { waybillStore?: Promise<Store> }).waybillStore?.catch(() => undefined);
      await server?.close();
      await target?.close();
    });

    const api = (path: string, body: unknown, token = OPERATOR_TOKEN) =>
      new Request(`http://127.0.0.1:3000${path}`, {
        method: 'POST',
        headers: { host: '127.0.0.1:3000', 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify(body),
      });
    const cli = (args: string[], as = 'ann'): Promise<Result> =>
      runCli(['--db', target.url, '--as', as, ...args], { env: { WAYBILL_CLAIM_TTL_MS: '30000' } });
    const ok = async (result: Result | Promise<Result>) => {
      const done = await result;
      expect(done, done.stderr).toMatchObject({ code: 0 });
      return done;
    };
    const form = (fields: Record<string, string>) => {
      const data = new FormData();
      for (const [k, v] of Object.entries(fields)) data.set(k, v);
      return data;
    };
    /** The audit rows written since `afterId`, oldest first, without their id and time. */
    const auditSince = async (afterId: number) =>
      (await store.listAudit({ limit: 500 }))
        .filter((e) => e.id > afterId)
        .reverse()
        .map(({ actor, role, action, target: on, runId, detail }) => ({
          actor,
          role,
          action,
          target: on,
          runId,
          detail,
        }));
    const lastAuditId = async () => (await store.listAudit({ limit: 1 }))[0]?.id ?? 0;
    const now = () => Date.now() / 1000;
    const orphan = (key: string, runId: string) =>
      target.exec('INSERT INTO claims (idem_key, run_id, claimed_at) VALUES (?, ?, ?)', [key, runId, now() - 3600]);
    const live = (key: string, runId: string) =>
      target.exec(
        `INSERT INTO claims (idem_key, run_id, claimed_at, token, worker_id, lease_expires_at, heartbeat_at, step, attempt)
      VALUES (?, ?, ?, ?, 'w1', ?, ?, 3, 1)`,
        [key, runId, now(), `tok-${key}`, now() + 3600, now()],
      );
    const who = {
      dashboard: { actor: 'olga (operator)', role: 'operator' },
      api: { actor: 'operator token (api)', role: 'operator' },
      cli: { actor: 'ann', role: 'local' },
    };
    const WAYS = ['dashboard', 'api', 'cli'] as const;

    it('start: the same run, its event and its audit row from each way in', async () => {
      const from = await lastAuditId();
      const input = JSON.stringify({ count: 2 });
      expect(
        await actions.startRunAction(null, form({ workflow: 'agent-batch', input, id: 's-dashboard' })),
      ).toMatchObject({ ok: true });
      expect(
        (await routes.runs.POST(api('/api/v1/runs', { workflow: 'agent-batch', input: { count: 2 }, id: 's-api' })))
          .status,
      ).toBe(201);
      await ok(cli(['start', 'agent-batch', '--input', input, '--id', 's-cli']));
      const runs = await Promise.all(WAYS.map((w) => store.getRun(`s-${w}`)));
      expect(new Set(runs.map((r) => JSON.stringify([r?.workflow, r?.status, r?.inputJson, r?.totalSteps]))).size).toBe(
        1,
      );
      expect(runs[0]).toMatchObject({ workflow: 'agent-batch', status: 'queued', totalSteps: 2 });
      for (const w of WAYS) {
        expect((await store.listEvents(`s-${w}`)).map((e) => [e.outcome, e.detail])).toEqual([
          ['operator', `started by ${who[w].actor}`],
        ]);
      }
      expect(await auditSince(from)).toEqual(
        WAYS.map((w) => ({
          ...who[w],
          action: 'start',
          target: `s-${w}`,
          runId: `s-${w}`,
          detail: 'workflow agent-batch',
        })),
      );
    }, 60_000);

    it('pause, resume, cancel with a reason, retry: the same statuses, events and audit rows', async () => {
      for (const w of WAYS)
        await store.createRun({ id: `a-${w}`, workflow: 'agent-batch', inputJson: '{"count":2}', totalSteps: 2 });
      const from = await lastAuditId();
      const steps = [['pause'], ['resume'], ['cancel', 'wrong input'], ['retry']] as const;
      for (const [action, reason] of steps) {
        expect(await actions.actOnRuns({ action, ids: ['a-dashboard'], reason })).toMatchObject({ ok: true });
        const response = await routes.act.POST(api(`/api/v1/runs/a-api/${action}`, reason ? { reason } : {}), {
          params: Promise.resolve({ id: 'a-api', action }),
        });
        expect(response.status).toBe(200);
        await ok(cli([action, 'a-cli', ...(reason ? ['--reason', reason] : [])]));
        const statuses = await Promise.all(WAYS.map(async (w) => (await store.getRun(`a-${w}`))?.status));
        expect(new Set(statuses).size, `${action}: ${statuses.join(', ')}`).toBe(1);
      }
      for (const w of WAYS) {
        expect((await store.listEvents(`a-${w}`)).map((e) => e.detail)).toEqual([
          `pause by ${who[w].actor}: queued → paused`,
          `resume by ${who[w].actor}: paused → queued`,
          `cancel by ${who[w].actor}: queued → cancelled`,
          `retry by ${who[w].actor}: cancelled → queued`,
        ]);
      }
      const rows = await auditSince(from);
      expect(rows).toHaveLength(12);
      for (const w of WAYS) {
        expect(rows.filter((r) => r.target === `a-${w}`)).toEqual(
          steps.map(([action, reason]) => ({
            ...who[w],
            action,
            target: `a-${w}`,
            runId: `a-${w}`,
            detail: reason ? `reason: ${reason}` : null,
          })),
        );
      }
    }, 120_000);

    it('expire (orphaned, and forced on a live lease), resolve and sweep: the same effect and audit row', async () => {
      for (const w of WAYS) {
        await orphan(`e-${w}:0`, `e-${w}`);
        await live(`f-${w}:0`, `f-${w}`);
        await orphan(`r-${w}:0`, `r-${w}`);
      }
      const from = await lastAuditId();
      expect(await actions.expireClaimAction({ key: 'e-dashboard:0', reason: 'host lost' })).toMatchObject({
        ok: true,
      });
      expect(
        (await routes.expire.POST(api('/api/v1/claims/expire', { key: 'e-api:0', reason: 'host lost' }))).status,
      ).toBe(200);
      await ok(cli(['expire', 'e-cli:0', '--reason', 'host lost']));
      expect(await actions.expireClaimAction({ key: 'f-dashboard:0', force: true })).toMatchObject({ ok: true });
      expect((await routes.expire.POST(api('/api/v1/claims/expire', { key: 'f-api:0', force: true }))).status).toBe(
        200,
      );
      await ok(cli(['expire', 'f-cli:0', '--force']));
      expect(
        await actions.resolveClaimAction(
          null,
          form({ key: 'r-dashboard:0', result: '{"sent":true}', note: 'provider confirms' }),
        ),
      ).toMatchObject({ ok: true });
      expect(
        (
          await routes.resolve.POST(
            api('/api/v1/claims/resolve', { key: 'r-api:0', result: { sent: true }, note: 'provider confirms' }),
          )
        ).status,
      ).toBe(200);
      await ok(cli(['resolve', 'r-cli:0', '--result', '{"sent":true}', '--note', 'provider confirms']));

      const claimsLeft = await store.listClaims({ claimTtlMs: 30_000 });
      expect(claimsLeft).toEqual([]);
      for (const w of WAYS) {
        expect((await store.listEvents(`e-${w}`)).map((e) => e.outcome)).toEqual(['expired']);
        expect((await store.listEvents(`f-${w}`)).map((e) => e.outcome)).toEqual(['expired']);
        expect((await store.listCommitted(`r-${w}`)).map((c) => [c.idemKey, c.resultJson, c.source])).toEqual([
          [`r-${w}:0`, '{"sent":true}', 'manual'],
        ]);
      }
      const rows = await auditSince(from);
      expect(rows).toEqual([
        ...WAYS.map((w) => ({
          ...who[w],
          action: 'expire',
          target: `e-${w}:0`,
          runId: `e-${w}`,
          detail: 'reason: host lost',
        })),
        ...WAYS.map((w) => ({
          ...who[w],
          action: 'expire',
          target: `f-${w}:0`,
          runId: `f-${w}`,
          detail: 'forced: the lease was live',
        })),
        ...WAYS.map((w) => ({
          ...who[w],
          action: 'resolve',
          target: `r-${w}:0`,
          runId: `r-${w}`,
          detail: 'provider confirms',
        })),
      ]);

      // Sweeps, one way in after another, each over two orphans of its own; a live claim stays.
      await live('keep:0', 'keep');
      const before = await lastAuditId();
      const sweepers: Record<(typeof WAYS)[number], () => Promise<unknown>> = {
        dashboard: async () =>
          expect(await actions.sweepOrphanedAction({ confirm: true, reason: 'host lost' })).toMatchObject({
            ok: true,
            data: { expired: 2 },
          }),
        api: async () =>
          expect(await (await routes.sweep.POST(api('/api/v1/claims/sweep', { reason: 'host lost' }))).json()).toEqual({
            expired: 2,
            keys: ['s-api:0', 's-api:1'],
            skipped: [],
          }),
        cli: async () => ok(cli(['sweep', '--reason', 'host lost'])),
      };
      for (const w of WAYS) {
        await orphan(`s-${w}:0`, `s-${w}`);
        await orphan(`s-${w}:1`, `s-${w}`);
        await sweepers[w]();
      }
      expect((await store.listClaims({ claimTtlMs: 30_000 })).map((c) => c.idemKey)).toEqual(['keep:0']);
      expect(await auditSince(before)).toEqual(
        WAYS.map((w) => ({
          ...who[w],
          action: 'sweep',
          target: '*',
          runId: null,
          detail: `expired 2 orphaned claim(s): s-${w}:0, s-${w}:1; reason: host lost`,
        })),
      );
      // A sweep with nothing to do changes nothing and says so in no audit row.
      const idle = await lastAuditId();
      await ok(cli(['sweep']));
      expect(await routes.sweep.POST(api('/api/v1/claims/sweep', {})).then((r) => r.json())).toEqual({
        expired: 0,
        keys: [],
        skipped: [],
      });
      expect(await auditSince(idle)).toEqual([]);
      await target.exec('DELETE FROM claims');
    }, 120_000);

    it('prune: the CLI prunes an old finished run and audits it; a dry run is not audited', async () => {
      // Written through a store whose clock stood 40 days back, as a prune's victims were.
      const old = (await openStore(target.url, { clock: new ManualClock(Date.now() - 40 * 86_400_000) })) as FullStore;
      try {
        await old.createRun({ id: 'p-old', workflow: 'w', inputJson: '{}', totalSteps: 1 });
        await old.claimRun({ workerId: 'wk', leaseMs: 60_000, workflows: ['w'] });
        await old.finishRun('p-old', 'wk', { status: 'completed' });
      } finally {
        await old.close();
      }
      const from = await lastAuditId();
      await ok(cli(['prune', '--older-than', '30d', '--dry-run']));
      expect(await store.getRun('p-old')).not.toBeNull();
      expect(await auditSince(from)).toEqual([]);
      await ok(cli(['prune', '--older-than', '30d', '--reason', 'monthly']));
      expect(await store.getRun('p-old')).toBeNull();
      expect(await auditSince(from)).toEqual([
        {
          actor: 'ann',
          role: 'local',
          action: 'prune',
          target: '*',
          runId: null,
          detail: 'pruned 1 finished run(s) older than 30d: 0 committed, 0 events, 0 progress rows; reason: monthly',
        },
      ]);
    }, 60_000);

    it('refuses a viewer on the dashboard (403) and over the API (403 FORBIDDEN), changing nothing', async () => {
      await store.createRun({ id: 'v-1', workflow: 'agent-batch', inputJson: '{"count":2}', totalSteps: 2 });
      await orphan('v-1:0', 'v-1');
      const before = await target.dump();
      session.who = VIEWER;
      try {
        const forbidden = { digest: 'NEXT_HTTP_ERROR_FALLBACK;403' };
        await expect(
          actions.startRunAction(null, form({ workflow: 'agent-batch', input: '{"count":2}', id: 'v-2' })),
        ).rejects.toMatchObject(forbidden);
        for (const action of ['pause', 'resume', 'cancel', 'retry'] as const)
          await expect(actions.actOnRuns({ action, ids: ['v-1'] })).rejects.toMatchObject(forbidden);
        await expect(actions.expireClaimAction({ key: 'v-1:0' })).rejects.toMatchObject(forbidden);
        await expect(actions.resolveClaimAction(null, form({ key: 'v-1:0', result: '1' }))).rejects.toMatchObject(
          forbidden,
        );
        await expect(actions.sweepOrphanedAction({ confirm: true })).rejects.toMatchObject(forbidden);
      } finally {
        session.who = OLGA;
      }
      const refusals = [
        await routes.runs.POST(
          api('/api/v1/runs', { workflow: 'agent-batch', input: { count: 2 }, id: 'v-3' }, VIEWER_TOKEN),
        ),
        ...(await Promise.all(
          (['pause', 'resume', 'cancel', 'retry'] as const).map((action) =>
            routes.act.POST(api(`/api/v1/runs/v-1/${action}`, {}, VIEWER_TOKEN), {
              params: Promise.resolve({ id: 'v-1', action }),
            }),
          ),
        )),
        await routes.expire.POST(api('/api/v1/claims/expire', { key: 'v-1:0' }, VIEWER_TOKEN)),
        await routes.resolve.POST(api('/api/v1/claims/resolve', { key: 'v-1:0', result: 1 }, VIEWER_TOKEN)),
        await routes.sweep.POST(api('/api/v1/claims/sweep', {}, VIEWER_TOKEN)),
      ];
      for (const response of refusals) {
        expect([response.status, await response.json()]).toEqual([
          403,
          { error: { code: 'FORBIDDEN', message: 'the viewer role may not do this: it needs operator' } },
        ]);
      }
      expect(await target.dump()).toEqual(before);
    }, 60_000);

    it('refuses bad input from each way in, naming the field, changing nothing', async () => {
      await store.createRun({ id: 'b-1', workflow: 'agent-batch', inputJson: '{"count":2}', totalSteps: 2 });
      await orphan('b-1:0', 'b-1');
      const before = await target.dump();
      const long = 'x'.repeat(501);
      expect(await actions.actOnRuns({ action: 'cancel', ids: ['b-1'], reason: long })).toEqual({
        ok: false,
        message: 'invalid request',
        errors: { reason: ['at most 500 characters'] },
      });
      expect(await actions.expireClaimAction({ key: 'b-1:0', reason: 'a\u001b[31mb' })).toEqual({
        ok: false,
        message: 'invalid request',
        errors: { reason: ['must not contain control characters'] },
      });
      expect(await actions.sweepOrphanedAction({ confirm: true, reason: long })).toMatchObject({
        ok: false,
        errors: { reason: ['at most 500 characters'] },
      });
      expect(
        await actions.startRunAction(null, form({ workflow: 'agent-batch', input: '{"count":"two"}' })),
      ).toMatchObject({ ok: false, errors: { 'input.count': [expect.any(String)] } });
      const cancel = await routes.act.POST(api('/api/v1/runs/b-1/cancel', { reason: long }), {
        params: Promise.resolve({ id: 'b-1', action: 'cancel' }),
      });
      expect([cancel.status, (await cancel.json()).error]).toEqual([
        400,
        {
          code: 'INVALID_INPUT',
          message: 'reason: at most 500 characters',
          fields: { reason: ['at most 500 characters'] },
        },
      ]);
      const sweep = await routes.sweep.POST(api('/api/v1/claims/sweep', { reason: 'a\u0007b' }));
      expect([sweep.status, (await sweep.json()).error.fields]).toEqual([
        400,
        { reason: ['must not contain control characters'] },
      ]);
      const start = await routes.runs.POST(api('/api/v1/runs', { workflow: 'agent-batch', input: { count: 'two' } }));
      expect([start.status, Object.keys((await start.json()).error.fields)]).toEqual([400, ['input.count']]);
      for (const [args, line] of [
        [['cancel', 'b-1', '--reason', long], 'waybill cancel: --reason: at most 500 characters\n'],
        [['sweep', '--reason', 'a\u0007b'], 'waybill sweep: --reason: must not contain control characters\n'],
        [
          ['prune', '--older-than', '1h', '--reason', 'tidy'],
          'waybill prune: --older-than: 1h is under 24h, and a pruned idempotency key can no longer deduplicate a retry (--force to prune anyway)\n',
        ],
        [['cancel', 'b-1', '--as', ''], 'waybill cancel: --as: must not be empty\n'],
      ] as [string[], string][]) {
        expect(await cli(args)).toEqual({ code: 2, stdout: '', stderr: line });
      }
      expect(await target.dump()).toEqual(before);
    }, 60_000);
  });
}
