/**
 * `waybill rerun` of a fan-out parent written as the guide writes it (D4): `research` starts a child per topic,
 * waits for them, then `ctx.step('merge', …)`, and numbers none of its steps. A rerun or fork from step 0 said
 * "run fset has no steps to go back to" while `waybill runs` showed it completed with 6 committed. It now says how
 * many it committed, that none is numbered, and what applies instead: a new run, or a retry of a failed one. The
 * words come from the store's one refusal (lib/store/shared/rewind.ts), so the rerun, the fork, their dry runs and
 * the rerun dialog's preview (lib/control rerunPreview, behind GET /api/v1/runs/{id}/rerun-preview) say the same.
 * The real CLI as a process, on a real SQLite file and a PostgreSQL schema; nothing is changed.
 */
import { describe, expect, it } from 'vitest';
import { type Caller, rewind } from '../../lib/control';
import { RewindRefusedError } from '../../lib/errors';
import { openStore } from '../../lib/store/index';
import { postgresAvailable, testSchema } from '../support/postgres';
import { freshDb, runCli } from './support';

/** A run's rows as a fan-out parent commits them: a `child:<name>` per child, then `merge`, none numbered. */
function seedSql(now: number): string[] {
  const run = (id: string, status: string) =>
    `INSERT INTO runs (id, workflow, input_json, status, attempts, created_at, updated_at)
     VALUES ('${id}', 'fan', '{"n":5}', '${status}', 1, ${now}, ${now})`;
  const commit = (runId: string, key: string, at: number) =>
    `INSERT INTO committed (idem_key, run_id, result_json, committed_at, step, source)
     VALUES ('${runId}:${key}', '${runId}', '{"runId":"${runId}:${key}"}', ${at}, NULL, 'executed')`;
  return [
    run('fset', 'completed'),
    ...[0, 1, 2, 3, 4].map((i) => commit('fset', `child:k${i}`, now - 10 + i)),
    commit('fset', 'merge', now - 1),
    run('ffail', 'failed'),
    commit('ffail', 'child:k0', now - 2),
    run('fnone', 'completed'),
  ];
}

const UNNUMBERED =
  "(ctx.step without { step }, a child's start, a race's answer), so no rerun or fork can start from one";
const FSET = `run fset has 6 committed steps and none has a step number ${UNNUMBERED}: start a new run of fan with its input to run it again (a step given { step: n } can be rerun from in later runs); nothing was changed`;
const FFAIL = `run ffail has 1 committed step and none has a step number ${UNNUMBERED}: retry it to go on where it stopped, or start a new run of fan with its input (a step given { step: n } can be rerun from in later runs); nothing was changed`;
const VIEWER: Caller = { actor: 'vera', role: 'viewer', channel: 'api' };

const reachable = await postgresAvailable('test/cli/rerun-unnumbered');

describe.each([['sqlite'], ['postgres']] as const)('rerun of a run none of whose steps is numbered, on %s', (name) => {
  it.skipIf(name === 'postgres' && !reachable)(
    'says how many it committed and what to do instead, on the CLI and in the preview, changing nothing',
    async () => {
      let url: string;
      let dump: () => Promise<string>;
      if (name === 'sqlite') {
        const db = await freshDb();
        url = db.url;
        db.raw((conn) => {
          for (const sql of seedSql(Date.now() / 1000)) conn.exec(sql);
        });
        dump = async () => JSON.stringify(db.dump());
      } else {
        const schema = await testSchema('wb_rerun_unnumbered');
        url = schema.url;
        await (await openStore(url)).close();
        for (const sql of seedSql(Date.now() / 1000))
          await schema.admin.query(sql.replace(/INSERT INTO (\w+)/, (_, t) => `INSERT INTO ${schema.t(t)}`));
        dump = async () => {
          const tables = [];
          for (const t of ['runs', 'committed', 'committed_history', 'progress', 'step_events', 'audit'])
            tables.push(await schema.admin.query(`SELECT * FROM ${schema.t(t)} ORDER BY 1`));
          return JSON.stringify(tables);
        };
      }
      const before = await dump();
      const cli = (args: string[]) => runCli(['--db', url, ...args]);
      const [rerun, dry, fork, failed, none] = await Promise.all([
        cli(['rerun', 'fset', '--from-step', '0']),
        cli(['rerun', 'fset', '--from-step', '0', '--dry-run']),
        cli(['fork', 'fset', '--from-step', '0']),
        cli(['rerun', 'ffail', '--from-step', '0']),
        cli(['rerun', 'fnone', '--from-step', '0']),
      ]);
      expect([rerun.code, rerun.stdout, rerun.stderr]).toEqual([2, '', `waybill rerun: ${FSET}\n`]);
      expect([dry.code, dry.stdout, dry.stderr]).toEqual([2, '', `waybill rerun: ${FSET}\n`]);
      expect([fork.code, fork.stdout, fork.stderr]).toEqual([2, '', `waybill fork: ${FSET}\n`]);
      expect([failed.code, failed.stderr]).toEqual([2, `waybill rerun: ${FFAIL}\n`]);
      // A run that committed nothing has nothing to go back to, as before.
      expect([none.code, none.stderr]).toEqual([
        2,
        'waybill rerun: run fnone has no steps to go back to; nothing was changed\n',
      ]);

      // The rerun dialog's preview reads through the API's route into lib/control: the same refusal.
      const store = await openStore(url);
      try {
        const deps = { store: async () => store, claimTtlMs: 30_000, maxBytes: 10_000 };
        const preview = await rewind.rerunPreview(deps, VIEWER, { runId: 'fset', fromStep: 0 }).catch((e) => e);
        expect(preview).toBeInstanceOf(RewindRefusedError);
        expect((preview as Error).message).toBe(FSET);
      } finally {
        await store.close();
      }
      expect(await dump()).toBe(before);
    },
  );
});
