/**
 * What a pick under a concurrency limit costs behind held runs and behind the workflow's history (#27, D1):
 * `npx tsx bench/limits-pick.ts sqlite|postgres`. Each shape is seeded by INSERT … SELECT into a fresh store
 * (SQLite: a file under the OS's tmp; PostgreSQL: a schema of TEST_DATABASE_URL, dropped after): one `acme` run
 * running under a limit of 1 per customer, `held` acme runs queued (held by it) ahead of one runnable `beta` run
 * in the pick's order, and `finished` completed runs of the same workflow. It times claimRun taking beta (then
 * released; PICKS times, 5 unless the environment says, the median) and, on SQLite, the wake watcher's look
 * (anyRunnable) once beta is taken and every queued run is held.
 * SQLite's store is not ANALYZEd, as Waybill never runs ANALYZE; PostgreSQL's pick is timed as inserted, then
 * ANALYZEd (as autovacuum would have by then): the second is the table's claimRun figure, the first its last column.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { Store } from '../lib/store/contract';
import { openPostgresStore } from '../lib/store/postgres';
import { pickLimits } from '../lib/store/shared/run-limits-sql';
import { openSqliteStore } from '../lib/store/sqlite';
import { anyRunnable, PUBLISHED_LIMITS } from '../lib/store/sqlite/runs';

const kind = process.argv[2] === 'postgres' ? 'postgres' : 'sqlite';
const url = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const LIMITS = { concurrency: { limit: 1, key: 'customer' } };
const SHAPES = [
  { held: 1000, finished: 0 },
  { held: 5000, finished: 0 },
  { held: 20, finished: 50_000 },
];

const PICKS = Number(process.env.PICKS ?? 5);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** The seed, one statement per table part: `now` is the store's epoch seconds. */
function seedSql(held: number, finished: number, now: number, series: (n: number) => string): string[] {
  const cols = 'id, workflow, input_json, status, attempts, created_at, updated_at, started_at, finished_at, priority';
  return [
    `INSERT INTO runs (${cols}) SELECT 'old-' || i, 'percust', '{"customer":"c' || (i % 500) || '"}', 'completed', 1,
      ${now - 86400} + i * 0.001, ${now - 86400} + i * 0.001, ${now - 86400}, ${now - 86400}, 0 FROM ${series(finished)}`,
    `INSERT INTO runs (id, workflow, input_json, status, owner, lease_expires_at, attempts, created_at, updated_at, started_at, priority)
      VALUES ('acme-run', 'percust', '{"customer":"acme"}', 'running', 'x', ${now} + 600, 1, ${now} - 10, ${now} - 10, ${now} - 10, 100)`,
    `INSERT INTO runs (${cols}) SELECT 'acme-' || i, 'percust', '{"customer":"acme"}', 'queued', 0,
      ${now} - 5 + i * 0.0001, ${now}, NULL, NULL, 100 FROM ${series(held)}`,
    `INSERT INTO runs (${cols}) VALUES ('beta-0', 'percust', '{"customer":"beta"}', 'queued', 0, ${now}, ${now}, NULL, NULL, 0)`,
  ];
}

async function timePicks(store: Store): Promise<number> {
  const ms: number[] = [];
  for (let k = 0; k < PICKS; k++) {
    const t = performance.now();
    const got = await store.claimRun({ workerId: 'y', leaseMs: 600_000, workflows: ['percust'] });
    ms.push(performance.now() - t);
    if (got?.id !== 'beta-0') throw new Error(`the pick took ${got?.id ?? 'nothing'}, not beta-0`);
    await store.releaseRun(got.id, 'y');
  }
  return median(ms);
}

async function publish(store: Store) {
  await store.registerWorker({ id: 'x', host: 'h', pid: 1, slots: 4 });
  await store.publishWorkflows('x', [
    { name: 'percust', description: null, inputSchemaJson: '{}', totalSteps: 1, version: null, limits: LIMITS },
  ]);
}

async function sqlite(held: number, finished: number) {
  const dir = mkdtempSync(join(tmpdir(), 'waybill-limits-'));
  const store = openSqliteStore({ path: join(dir, 'pick.db') });
  try {
    await publish(store);
    const now = Date.now() / 1000;
    const series = (n: number) =>
      `(WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < ${n - 1}) SELECT i FROM s WHERE ${n} > 0)`;
    for (const text of seedSql(held, finished, now, series)) store.db.exec(text);
    const pick = await timePicks(store);
    // beta taken: every queued run is held, which is when a look that ignores the limits wakes every idle worker.
    await store.claimRun({ workerId: 'y', leaseMs: 600_000, workflows: ['percust'] });
    // The watcher's look (sqlite/notify.ts): the published limits, then the statement they make.
    const published = store.db.prepare(PUBLISHED_LIMITS).all({ workflows: null }) as Parameters<typeof pickLimits>[1];
    const look = store.db.prepare(anyRunnable(pickLimits(['percust'], published, undefined))).pluck();
    const looks: number[] = [];
    let answer: unknown;
    for (let k = 0; k < 5; k++) {
      const t = performance.now();
      answer = look.get({ now: Date.now() / 1000 });
      looks.push(performance.now() - t);
    }
    return { pick, look: `${median(looks).toFixed(2)} ms, says ${answer === 1 ? 'runnable' : 'none'}` };
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function postgres(held: number, finished: number) {
  const schema = `waybill_limits_${process.pid}_${randomBytes(2).toString('hex')}`;
  const store = await openPostgresStore({ url, schema });
  const client = new pg.Client({ connectionString: url, options: `-c search_path=${schema}` });
  await client.connect();
  try {
    await publish(store);
    const now = Date.now() / 1000;
    for (const text of seedSql(held, finished, now, (n) => `generate_series(0, ${n - 1}) AS i`))
      await client.query(text);
    const fresh = await timePicks(store);
    await client.query('ANALYZE runs');
    return { pick: await timePicks(store), look: `${fresh.toFixed(1)} ms before ANALYZE` };
  } finally {
    await store.close();
    await client.query(`DROP SCHEMA ${schema} CASCADE`);
    await client.end();
  }
}

console.log(`| ${kind} | held | finished | claimRun (median of ${PICKS}) | wake look, all held |`);
for (const { held, finished } of SHAPES) {
  const { pick, look } = kind === 'sqlite' ? await sqlite(held, finished) : await postgres(held, finished);
  console.log(`| | ${held} | ${finished} | ${pick.toFixed(1)} ms | ${look ?? '—'} |`);
}
