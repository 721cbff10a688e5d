/**
 * What one step's waybill_commit does on the grown PostgreSQL store beside an empty one, statement by statement:
 * `npx tsx bench/grown-explain.ts [--steps N] [--fence]`. Copies the kept grown database (bench/grown-store.ts),
 * drives a run of N steps through waybill_claim and waybill_commit on each store, the way a worker's requests do
 * (`--fence`: with the run fence a worker's claims carry), and prints auto_explain's EXPLAIN (ANALYZE, BUFFERS) of
 * every statement the last step's commit ran, nested ones included, then the buffers each side touched a step.
 * A profiling tool, not a measurement: the figures of record are `npm run bench -- --only grown`'s.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { openPostgresStore } from '../lib/store/postgres';
import { GROWN_SCHEMA, grownPostgres } from './grown-store';

const arg = (name: string) => process.argv.indexOf(`--${name}`);
const steps = arg('steps') < 0 ? 200 : Number(process.argv[arg('steps') + 1]);
const fence = arg('fence') >= 0;
const url = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const log = (line: string) => process.stderr.write(`${line}\n`);

async function main() {
  const grown = await grownPostgres(url, `waybill_explain_${process.pid}_${randomBytes(2).toString('hex')}`, log);
  try {
    await (await openPostgresStore({ url: grown.url, schema: 'waybill_empty', poolSize: 1 })).close();
    for (const schema of ['waybill_empty', GROWN_SCHEMA]) await profile(grown.url, schema);
  } finally {
    await grown.drop();
  }
}

async function profile(dbUrl: string, schema: string) {
  const client = new pg.Client({ connectionString: dbUrl });
  await client.connect();
  const notices: string[] = [];
  client.on('notice', (n) => notices.push(n.message ?? ''));
  try {
    await client.query(`SET search_path TO ${schema}`);
    const run = `explain-${schema}-${process.pid}`;
    const worker = 'explain-worker';
    await client.query(
      `INSERT INTO runs (id, workflow, input_json, status, total_steps, owner, lease_expires_at, attempts, created_at,
        updated_at, started_at) VALUES ($1, 'explain', '{}', 'running', $2, $3, extract(epoch from now()) + 600, 1,
        extract(epoch from now()), extract(epoch from now()), extract(epoch from now()))`,
      [run, steps, worker],
    );
    const claim = (step: number) => ({
      key: `${run}:step:${step}`,
      run,
      token: randomBytes(8).toString('hex'),
      worker,
      step,
      attempt: 1,
      lease: 30,
      ttl: 30,
      fence: fence ? 1 : null,
    });
    let next = claim(0);
    await client.query('SELECT * FROM waybill_claim($1::jsonb, 0)', [JSON.stringify(next)]);
    const buffers: number[] = [];
    for (let step = 0; step < steps; step++) {
      const last = step === steps - 1;
      const following = claim(step + 1);
      const request = {
        key: next.key,
        token: next.token,
        run,
        result: JSON.stringify(step),
        step,
        fingerprint: null,
        worker,
        duration: 0.1,
        input: null,
        mayHaveLanded: false,
        progress: {
          run,
          step: step + 1,
          state: JSON.stringify({ processed: step + 1 }),
          executed: 1,
          skipped: 0,
          awaited: 0,
          saveMs: null,
        },
        next: following,
      };
      if (last) {
        await client.query(`LOAD 'auto_explain'`);
        await client.query(`SET auto_explain.log_min_duration = 0; SET auto_explain.log_analyze = on;
          SET auto_explain.log_buffers = on; SET auto_explain.log_nested_statements = on;
          SET auto_explain.log_level = notice; SET client_min_messages = notice`);
      }
      const { rows } = await client.query<{
        plan: { Plan: { 'Shared Hit Blocks': number; 'Shared Read Blocks': number } }[];
      }>('EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT * FROM waybill_commit($1::jsonb, 0)', [
        JSON.stringify(request),
      ]);
      const plan = (rows[0] as unknown as { 'QUERY PLAN': { Plan: Record<string, number> }[] })['QUERY PLAN'][0]!.Plan;
      buffers.push((plan['Shared Hit Blocks'] ?? 0) + (plan['Shared Read Blocks'] ?? 0));
      next = following;
    }
    await client.query('SET auto_explain.log_min_duration = -1');
    const sorted = [...buffers].sort((a, b) => a - b);
    log(`\n===== ${schema}: the last step's statements (auto_explain) =====`);
    for (const n of notices) log(n);
    log(`===== ${schema}: shared buffers a commit touched, median of ${steps}: ${sorted[sorted.length >> 1]} =====`);
  } finally {
    await client.end();
  }
}

main().catch((error: unknown) => {
  log(String((error as Error).stack ?? error));
  process.exit(1);
});
