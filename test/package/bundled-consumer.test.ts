/**
 * The `waybill` package bundled into a consumer's one file, as esbuild makes it for a user: the tarball
 * (./pack.ts) installed into a project of its own, the project's entry bundled with waybill, zod and pino
 * inside and only the drivers (better-sqlite3, pg) left to node_modules, then node_modules/waybill deleted and
 * the bundle run by `node` from another directory. It migrates a fresh SQLite file and a fresh PostgreSQL schema
 * and checkpoints a loop in each: the migrations travel inside the JavaScript, no file beside the package is read.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresAvailable, testSchema } from '../support/postgres';
import { type Consumer, cleanEnv, makeConsumer, ROOT, run } from './consumer';
import { packBoth } from './pack';

/** Five steps of runAgent on the store its first argument names; prints the report. */
const ENTRY = `import { Checkpoint, openStore, runAgent } from 'waybill';

const store = await openStore(process.argv[2]);
const checkpoint = new Checkpoint(store, 'bundled-run', { workerId: 'bundled', leaseMs: 30_000 });
const report = await runAgent([0, 1, 2, 3, 4], checkpoint, async (item) => ({ doubled: item * 2 }));
await store.close();
console.log(JSON.stringify(report));
`;

let consumer: Consumer;
let bundle: string;
let elsewhere: string;
const pgUp = await postgresAvailable('bundled consumer (the PostgreSQL backend from a bundle)');

beforeAll(async () => {
  consumer = await makeConsumer([(await packBoth()).waybill.tarball]);
  consumer.write('src/main.mjs', ENTRY);
  bundle = consumer.file('dist/main.mjs');
  const result = await build({
    absWorkingDir: consumer.dir,
    entryPoints: ['src/main.mjs'],
    outfile: bundle,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node22',
    external: ['better-sqlite3', 'pg'],
    logLevel: 'silent',
  });
  expect(result.errors).toEqual([]);
  // What a bundle of the package must not need: the package itself.
  rmSync(consumer.file('node_modules/waybill'), { recursive: true });
  elsewhere = mkdtempSync(join(tmpdir(), 'waybill-bundle-cwd-'));
}, 20 * 60_000);

afterAll(() => {
  consumer?.remove();
  if (elsewhere && !process.env.WAYBILL_KEEP_TMP) rmSync(elsewhere, { recursive: true, force: true });
}, 5 * 60_000);

const runBundle = (url: string) => run(process.execPath, [bundle, url], { cwd: elsewhere, env: cleanEnv() });

/** Every migration drizzle-kit made for a dialect, by tag: what the store's ledger must hold. */
const journal = (dialect: 'sqlite' | 'pg') =>
  (
    JSON.parse(readFileSync(join(ROOT, 'drizzle', dialect, 'meta', '_journal.json'), 'utf8')) as {
      entries: { tag: string }[];
    }
  ).entries.map((e) => e.tag);

const STEPS = [0, 1, 2, 3, 4].map((step) => ({
  idem_key: `bundled-run:step:${step}`,
  step,
  result_json: JSON.stringify({ doubled: step * 2 }),
}));

describe('waybill bundled by esbuild into one file', () => {
  it('is that one file, with the drivers left as imports and no waybill package beside it', () => {
    expect(readdirSync(consumer.file('dist'))).toEqual(['main.mjs']);
    expect(readdirSync(consumer.file('node_modules'))).not.toContain('waybill');
  });

  it('migrates a fresh SQLite file and checkpoints every step once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'waybill-bundle-sqlite-'));
    try {
      const out = await runBundle(`file:${join(dir, 'store.db')}`);
      expect(out.stderr).toBe('');
      expect(out.code).toBe(0);
      expect(JSON.parse(out.stdout)).toEqual({ processed: 5, executed: 5, skipped: 0, awaited: 0 });
      const db = new Database(join(dir, 'store.db'), { readonly: true });
      try {
        expect(db.prepare('SELECT tag FROM waybill_migrations ORDER BY tag').pluck().all()).toEqual(journal('sqlite'));
        expect(
          db
            .prepare('SELECT idem_key, step, result_json FROM committed WHERE run_id = ? ORDER BY step')
            .all('bundled-run'),
        ).toEqual(STEPS);
        expect(db.prepare('SELECT count(*) FROM committed').pluck().get()).toBe(5);
      } finally {
        db.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.skipIf(!pgUp)('migrates a fresh PostgreSQL schema and checkpoints every step once', async () => {
    const schema = await testSchema('wb_bundle');
    const out = await runBundle(schema.url);
    expect(out.stderr).toBe('');
    expect(out.code).toBe(0);
    expect(JSON.parse(out.stdout)).toEqual({ processed: 5, executed: 5, skipped: 0, awaited: 0 });
    const tags = await schema.admin.query<{ tag: string }>(
      `SELECT tag FROM ${schema.t('waybill_migrations')} ORDER BY tag`,
    );
    expect(tags.map((r) => r.tag)).toEqual(journal('pg'));
    const steps = await schema.admin.query(
      `SELECT idem_key, step, result_json FROM ${schema.t('committed')} ORDER BY step`,
    );
    expect(steps).toEqual(STEPS);
  });
});
