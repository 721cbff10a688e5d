/**
 * The run pick's plan on PostgreSQL behind a long history: `npx tsx scripts/explain-pick.ts [finished] [queued]`
 * seeds a throwaway schema (of TEST_DATABASE_URL, or DATABASE_URL when it is postgres://) with `finished` finished
 * runs (1,000,000 by default, INSERT … SELECT generate_series), a thousand stopped workers, and a live queue
 * (100 running, one waiting, `queued` queued: 1,000 by default), then prints the plans of the exact statement a worker's claimRun sends: as planned for the values at hand
 * (what an unnamed statement gets), as the generic plan a named one may settle on, and EXPLAIN ANALYZE of one
 * pick, rolled back. The README's "PostgreSQL at scale" shows its output; test/postgres/pick-plan.test.ts asserts
 * the same plans use runs_runnable and read runs by no Seq Scan.
 */
import { randomBytes } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { systemClock } from '../lib/clock';
import { type PgConnection, postgresConnection } from '../lib/store/postgres/connection';
import { openPostgresStore } from '../lib/store/postgres/index';
import { claimStatement } from '../lib/store/postgres/runs';

/** What a worker serving `wf` with nothing in hand asks. */
export const PICK = { workerId: 'w-live-1', leaseMs: 30_000, workflows: ['wf'], holding: [] as string[] };

/** The history and the live queue seeded: what a busy fleet's database holds after a long while. */
export interface History {
  /** Runs completed long ago. */
  finished: number;
  /** Runs queued now, the oldest first in line. */
  queued: number;
  /** Runs running now, each under a live worker's lease, all older than the queue. */
  running: number;
  /** Stopped workers: a day of a large fleet's churn (the retention keeps no more). */
  stoppedWorkers: number;
  /** Waits decided long ago, of finished runs: sleeps that came, approvals given. */
  decidedWaits: number;
}

export const HISTORY: History = {
  finished: 1_000_000,
  queued: 1000,
  running: 100,
  stoppedWorkers: 1000,
  decidedWaits: 100_000,
};

/**
 * Fills the schema's tables (already migrated) with a fleet's history and its live queue: `finished` runs
 * completed long ago (`decidedWaits` of them with a wait decided), `stoppedWorkers` workers stopped, two live
 * workers running `running` runs (older than any queued run, so a pick passes them all), one run waiting on a
 * sleep not yet due, and `queued` queued runs.
 * ANALYZEd, as autovacuum would have by then.
 */
export async function seedHistory(client: pg.ClientBase, schema: string, h: History = HISTORY): Promise<void> {
  const t = (name: string) => `"${schema}"."${name}"`;
  const now = 'extract(epoch from now())';
  await client.query(
    `INSERT INTO ${t('runs')} (id, workflow, input_json, status, total_steps, attempts, created_at, updated_at, started_at, finished_at, output_json)
     SELECT 'done-' || lpad(i::text, 8, '0'), 'wf', '{}', 'completed', 3, 1, 1e9 + i, 1e9 + i, 1e9 + i, 1e9 + i + 1, '"ok"'
     FROM generate_series(1, $1::int) AS i`,
    [h.finished],
  );
  await client.query(
    `INSERT INTO ${t('workers')} (id, host, pid, started_at, heartbeat_at, stopped_at)
     SELECT 'w-gone-' || i, 'h', i, 1e9 + i, 1e9 + i, 1e9 + i FROM generate_series(1, $1::int) AS i`,
    [h.stoppedWorkers],
  );
  await client.query(
    `INSERT INTO ${t('workers')} (id, host, pid, started_at, heartbeat_at)
     VALUES ('w-live-1', 'h', 1, ${now}, ${now}), ('w-live-2', 'h', 2, ${now}, ${now})`,
  );
  await client.query(
    `INSERT INTO ${t('runs')} (id, workflow, input_json, status, owner, lease_expires_at, attempts, created_at, updated_at, started_at)
     SELECT 'running-' || lpad(i::text, 6, '0'), 'wf', '{}', 'running', 'w-live-' || (1 + i % 2), ${now} + 30, 1,
       ${now} - 100000 + i, ${now}, ${now} FROM generate_series(1, $1::int) AS i`,
    [h.running],
  );
  await client.query(
    `INSERT INTO ${t('runs')} (id, workflow, input_json, status, attempts, created_at, updated_at)
     VALUES ('waiting-1', 'wf', '{}', 'waiting', 1, ${now} - 50000, ${now})`,
  );
  await client.query(
    `INSERT INTO ${t('waits')} (run_id, name, kind, created_at, due_at) VALUES ('waiting-1', 'nap', 'sleep', ${now}, ${now} + 3600)`,
  );
  await client.query(
    `INSERT INTO ${t('waits')} (run_id, name, kind, created_at, due_at, decided_at, decision_json, decided_by)
     SELECT 'done-' || lpad(i::text, 8, '0'), 'nap', 'sleep', 1e9 + i, 1e9 + i, 1e9 + i, '{"timedOut":true}', 'timer'
     FROM generate_series(1, $1::int) AS i`,
    [h.decidedWaits],
  );
  await client.query(
    `INSERT INTO ${t('runs')} (id, workflow, input_json, status, attempts, created_at, updated_at)
     SELECT 'queued-' || lpad(i::text, 6, '0'), 'wf', '{}', 'queued', 0, ${now} - 10000 + i, ${now}
     FROM generate_series(1, $1::int) AS i`,
    [h.queued],
  );
  for (const table of ['runs', 'workers', 'waits']) await client.query(`ANALYZE ${t(table)}`);
}

export interface PickPlans {
  /** EXPLAIN (FORMAT JSON) with the values bound: the plan an unnamed statement gets. */
  custom: PlanNode;
  /** The generic plan (plan_cache_mode = force_generic_plan) a named statement may settle on after five runs. */
  generic: PlanNode;
  /** EXPLAIN (ANALYZE, BUFFERS) of one pick, in a transaction rolled back: the run is not taken. */
  analyzed: string;
}

export interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  Plans?: PlanNode[];
  [key: string]: unknown;
}

/** Every node of a plan, depth first. */
export function planNodes(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(planNodes)];
}

/** The plans of claimStatement(PICK), built on the store's connection `c`, on a client in the store's schema. */
export async function explainPick(client: pg.ClientBase, c: PgConnection): Promise<PickPlans> {
  const { text, values } = c.text(claimStatement(c, PICK));
  const plan = async (sql: string, params: unknown[] = []) =>
    (await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(sql, params)).rows[0]!['QUERY PLAN'][0].Plan;
  const custom = await plan(`EXPLAIN (FORMAT JSON) ${text}`, values);
  const literals = values.map((v) => literal(client, v)).join(', ');
  await client.query('BEGIN');
  try {
    await client.query('SET LOCAL plan_cache_mode = force_generic_plan');
    await client.query(`PREPARE waybill_pick_plan AS ${text}`);
    const generic = await plan(`EXPLAIN (FORMAT JSON) EXECUTE waybill_pick_plan(${literals})`);
    await client.query('DEALLOCATE waybill_pick_plan');
    const analyzed = (
      await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${text}`, values)
    ).rows
      .map((r) => r['QUERY PLAN'])
      .join('\n');
    return { custom, generic, analyzed };
  } finally {
    await client.query('ROLLBACK');
  }
}

function literal(client: pg.ClientBase, value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  if (typeof value === 'number') return String(value);
  if (Array.isArray(value))
    return `${(client as pg.Client).escapeLiteral(`{${value.map((v) => JSON.stringify(v)).join(',')}}`)}`;
  return (client as pg.Client).escapeLiteral(String(value));
}

async function main() {
  const finished = Number(process.argv[2] ?? HISTORY.finished);
  const queued = Number(process.argv[3] ?? HISTORY.queued);
  const base =
    process.env.TEST_DATABASE_URL ??
    (process.env.DATABASE_URL?.startsWith('postgres')
      ? process.env.DATABASE_URL
      : 'postgres://postgres@127.0.0.1:5432/test');
  const schema = `wb_explain_${randomBytes(4).toString('hex')}`;
  const store = await openPostgresStore({ url: base, schema });
  const client = new pg.Client({ connectionString: base, options: `-c search_path=${schema}` });
  await client.connect();
  try {
    const began = performance.now();
    await seedHistory(client, schema, { ...HISTORY, finished, queued });
    const seeded = await client.query<{ status: string; n: string }>(
      'SELECT status, count(*) AS n FROM runs GROUP BY status ORDER BY status',
    );
    console.log(
      `seeded in ${((performance.now() - began) / 1000).toFixed(1)} s:`,
      seeded.rows.map((r) => `${r.status} ${r.n}`).join(', '),
    );
    const plans = await explainPick(client, postgresConnection(store.pool, systemClock));
    const show = (node: PlanNode, depth = 0): string =>
      [
        `${'  '.repeat(depth)}${node['Node Type']}${node['Index Name'] ? ` using ${node['Index Name']}` : ''}${node['Relation Name'] ? ` on ${node['Relation Name']}` : ''}`,
        ...(node.Plans ?? []).map((p) => show(p, depth + 1)),
      ].join('\n');
    console.log(`\ncustom plan:\n${show(plans.custom)}`);
    console.log(`\ngeneric plan:\n${show(plans.generic)}`);
    console.log(`\nEXPLAIN (ANALYZE, BUFFERS, COSTS OFF), rolled back:\n${plans.analyzed}`);
  } finally {
    await client.query(`DROP SCHEMA "${schema}" CASCADE`).catch(() => undefined);
    await client.end();
    await store.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main();
