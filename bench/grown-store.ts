/**
 * The grown stores the bench's `--only grown` section measures beside empty ones: a million committed steps over
 * ten thousand runs, as `waybill seed-demo --runs 10000 --steps 117` writes them (lib/store/seed), seeded once and
 * kept, then copied for each bench run, so that every run starts from the same rows and none re-seeds:
 * - SQLite: a file under the temp directory, copied into the bench's own directory;
 * - PostgreSQL: a template database beside the bench's, copied with CREATE DATABASE … TEMPLATE (a file copy).
 * The kept copy is named by a hash of the seed's plan and the schema's migrations, so a checkout whose schema
 * differs seeds its own. Seeding shows a bar on a terminal, a line every few seconds elsewhere.
 */
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { bar, LiveBlock } from '../lib/cli/format';
import { PG_MIGRATIONS, SQLITE_MIGRATIONS } from '../lib/store/migrate/migrations.generated';
import { openPostgresStore } from '../lib/store/postgres';
import { seedDemo, seedPlan } from '../lib/store/seed/index';
import { openSqliteStore } from '../lib/store/sqlite';

/** 10,000 runs, 1,003,000 committed steps (seedPlan says so), the "1M committed steps over 10k runs". */
export const GROWN_SEED = { runs: 10_000, steps: 117, prefix: 'grown' } as const;
/** The schema the grown PostgreSQL store's tables are in, inside its database. */
export const GROWN_SCHEMA = 'waybill_grown';

const key = (migrations: readonly { tag: string }[]) =>
  createHash('sha256')
    .update(JSON.stringify([GROWN_SEED, migrations.map((m) => m.tag)]))
    .digest('hex')
    .slice(0, 12);

/** Reports a seed's progress: a redrawn bar on a terminal, a plain line every 5 s elsewhere. */
function seedProgress(label: string, log: (line: string) => void) {
  const live = process.stderr.isTTY ? new LiveBlock(process.stderr) : null;
  let last = 0;
  const started = performance.now();
  return {
    update(done: number, total: number) {
      if (live) live.update([`${label}: seeding ${bar(done, total)} committed rows`]);
      else if (performance.now() - last > 5000) {
        last = performance.now();
        log(`${label}: seeding ${done}/${total} committed rows`);
      }
    },
    done() {
      live?.done();
      log(
        `${label}: seeded ${seedPlan(GROWN_SEED).committed} committed rows in ${((performance.now() - started) / 1000).toFixed(1)} s`,
      );
    },
  };
}

/** A fresh copy of the kept grown SQLite store in `dir` (seeded first if there is none yet); its path. */
export async function grownSqlite(dir: string, log: (line: string) => void): Promise<string> {
  const cacheDir = join(tmpdir(), 'waybill-bench-grown');
  const kept = join(cacheDir, `sqlite-${key(SQLITE_MIGRATIONS)}.db`);
  if (!existsSync(kept)) {
    mkdirSync(cacheDir, { recursive: true });
    const partial = `${kept}.partial`;
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${partial}${suffix}`, { force: true });
    const store = openSqliteStore({ path: partial, synchronous: 'normal' });
    const progress = seedProgress('grown sqlite', log);
    try {
      await seedDemo(store, GROWN_SEED, progress.update);
      // One file, no WAL beside it: what is copied is the whole store.
      store.db.pragma('wal_checkpoint(TRUNCATE)');
    } finally {
      await store.close();
    }
    progress.done();
    for (const suffix of ['-wal', '-shm']) rmSync(`${partial}${suffix}`, { force: true });
    renameSync(partial, kept);
  }
  const path = join(dir, 'grown.db');
  copyFileSync(kept, path);
  return path;
}

/**
 * A database of its own for this bench run, `${tag}_grown`, copied from the kept template (seeded first if there
 * is none yet), with the grown store in GROWN_SCHEMA. Its URL, and how to drop it.
 */
export async function grownPostgres(
  url: string,
  tag: string,
  log: (line: string) => void,
): Promise<{ url: string; drop: () => Promise<void> }> {
  const template = `waybill_bench_grown_${key(PG_MIGRATIONS)}`;
  const copy = `${tag}_grown`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    const exists = async (name: string) =>
      (await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount === 1;
    if (!(await exists(template))) {
      const partial = `${template}_partial`;
      await admin.query(`DROP DATABASE IF EXISTS ${partial}`);
      await admin.query(`CREATE DATABASE ${partial}`);
      const store = await openPostgresStore({ url: databaseUrl(url, partial), schema: GROWN_SCHEMA, poolSize: 2 });
      const progress = seedProgress('grown postgres', log);
      try {
        await seedDemo(store, GROWN_SEED, progress.update);
      } finally {
        await store.close();
      }
      progress.done();
      // Renamed once whole, so an interrupted seed is never taken for a kept one.
      await admin.query(`ALTER DATABASE ${partial} RENAME TO ${template}`);
    }
    // FILE_COPY: the template's files as they are, after a checkpoint, rather than every page through the WAL.
    await admin.query(`CREATE DATABASE ${copy} TEMPLATE ${template} STRATEGY FILE_COPY`);
  } finally {
    await admin.end();
  }
  return {
    url: databaseUrl(url, copy),
    drop: async () => {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS ${copy} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}

function databaseUrl(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}
