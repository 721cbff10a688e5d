/**
 * A read never writes: the read-only commands, as real processes, against no store (a fresh PostgreSQL
 * database, a mistyped SQLite path) say so and exit 2, and create no file, directory, schema or table. A store
 * that is behind is refused the same way. `waybill migrate` is what creates or upgrades, `--check` says whether
 * that is needed (exit 1) and `--print-sql` what it would run, neither writing anything; WAYBILL_MIGRATE=off
 * makes a worker refuse a store that is behind instead of upgrading it.
 */
import { existsSync, readdirSync } from 'node:fs';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { migrationsOf } from '../../lib/store/migrate/runner';
import { migrateSqlite } from '../../lib/store/sqlite/migrate';
import { postgresAvailable, testDatabase } from '../support/postgres';
import { tempDir } from '../support/tmp';
import { runCli } from './support';

const READS = [['runs'], ['inspect', 'r1'], ['claims'], ['audit'], ['logs', 'r1'], ['workflows'], ['step', 'r1', '0']];
const SQLITE = migrationsOf('sqlite');

describe('read-only commands against no store', () => {
  it('exit 2 on a missing SQLite path, naming it and `waybill migrate`, and create nothing', async () => {
    const dir = tempDir('waybill-nostore-');
    const results = await Promise.all(
      READS.map((args) => runCli(args, { cwd: dir.path, env: { DATABASE_URL: 'file:./typo-dir/wb.db' } })),
    );
    for (const [i, result] of results.entries()) {
      expect({ args: READS[i], code: result.code, stdout: result.stdout, stderr: result.stderr }).toEqual({
        args: READS[i],
        code: 2,
        stdout: '',
        stderr: `waybill ${READS[i]![0]}: no Waybill store at SQLite file ${dir.path}/typo-dir/wb.db (\`waybill migrate\` creates one)\n`,
      });
    }
    expect(readdirSync(dir.path)).toEqual([]);
  });

  it('migrate --check exits 1 and --print-sql prints 0000 on, creating nothing; migrate creates; --check 0', async () => {
    const dir = tempDir('waybill-nostore-');
    const env = { DATABASE_URL: 'file:./sub/wb.db' };
    const check = await runCli(['migrate', '--check'], { cwd: dir.path, env });
    expect(check).toEqual({
      code: 1,
      stdout: `no Waybill store at SQLite file ${dir.path}/sub/wb.db: ${SQLITE.length} migrations to apply (waybill migrate)\n`,
      stderr: '',
    });
    const sql = await runCli(['migrate', '--print-sql'], { cwd: dir.path, env });
    expect(sql.code).toBe(0);
    expect(sql.stdout.startsWith('-- 0000_init\nCREATE TABLE `claims` (')).toBe(true);
    expect(sql.stdout.match(/^-- \d{4}_\w+$/gm)).toEqual(SQLITE.map((m) => `-- ${m.tag}`));
    expect(readdirSync(dir.path)).toEqual([]);

    const created = await runCli(['migrate'], { cwd: dir.path, env });
    expect(created).toEqual({
      code: 0,
      stdout: `created SQLite file ${dir.path}/sub/wb.db: applied ${SQLITE.length} migrations, up to ${SQLITE.at(-1)!.tag}\n`,
      stderr: '',
    });
    const again = await runCli(['migrate', '--check'], { cwd: dir.path, env });
    expect(again).toEqual({
      code: 0,
      stdout: `SQLite file ${dir.path}/sub/wb.db is up to date (${SQLITE.length} migrations)\n`,
      stderr: '',
    });
    expect(await runCli(['runs'], { cwd: dir.path, env })).toEqual({ code: 0, stdout: 'no runs\n', stderr: '' });
  });

  it('refuses a store that is behind on a read and with WAYBILL_MIGRATE=off; migrate upgrades it', async () => {
    const dir = tempDir('waybill-behind-');
    const path = dir.file('wb.db');
    const old = new Database(path);
    migrateSqlite(old, SQLITE.slice(0, 5), 1);
    old.close();
    const tables = () =>
      new Database(path, { readonly: true })
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .all();
    const before = tables();
    const env = { DATABASE_URL: `file:${path}` };
    const behind = `SQLite file ${path} is behind this Waybill: 5 of ${SQLITE.length} migrations applied, ${SQLITE.length - 5} to go (up to ${SQLITE.at(-1)!.tag}); \`waybill migrate\` upgrades it; nothing was changed`;

    const read = await runCli(['runs'], { env });
    expect(read).toEqual({ code: 2, stdout: '', stderr: `waybill runs: ${behind}\n` });
    const worker = await runCli(['worker'], { env: { ...env, WAYBILL_MIGRATE: 'off' } });
    expect(worker).toEqual({ code: 2, stdout: '', stderr: `waybill worker: ${behind}\n` });
    const check = await runCli(['migrate', '--check'], { env });
    expect(check.code).toBe(1);
    expect(check.stdout).toContain(`is behind: 5 of ${SQLITE.length} migrations applied`);
    const sql = await runCli(['migrate', '--print-sql'], { env });
    expect(sql.stdout.match(/^-- \d{4}_\w+$/gm)).toEqual(SQLITE.slice(5).map((m) => `-- ${m.tag}`));
    expect(tables()).toEqual(before);

    const upgraded = await runCli(['migrate'], { env });
    expect(upgraded.stdout).toBe(
      `upgraded SQLite file ${path}: applied ${SQLITE.length - 5} migrations, up to ${SQLITE.at(-1)!.tag}\n`,
    );
    expect(await runCli(['runs'], { env })).toEqual({ code: 0, stdout: 'no runs\n', stderr: '' });
  });
});

const up = await postgresAvailable('read-only commands on PostgreSQL');

describe.skipIf(!up)('read-only commands against a fresh PostgreSQL database', () => {
  it('exit 2 naming the schema, and create no schema or table', async () => {
    const db = await testDatabase();
    const catalog = async () =>
      db.query(
        `SELECT n.nspname, c.relname FROM pg_namespace n LEFT JOIN pg_class c ON c.relnamespace = n.oid
         WHERE n.nspname NOT LIKE 'pg\\_%' AND n.nspname <> 'information_schema' ORDER BY 1, 2`,
      );
    const before = await catalog();
    expect(before).toEqual([{ nspname: 'public', relname: null }]);
    const where = `PostgreSQL schema "waybill" of ${new URL(db.url).host}/${db.name}`;
    for (const args of [['runs'], ['claims']]) {
      const result = await runCli(args, { env: { DATABASE_URL: db.url } });
      expect(result).toEqual({
        code: 2,
        stdout: '',
        stderr: `waybill ${args[0]}: no Waybill store at ${where} (\`waybill migrate\` creates one)\n`,
      });
    }
    const check = await runCli(['migrate', '--check'], { env: { DATABASE_URL: db.url } });
    expect(check.code).toBe(1);
    expect(await catalog()).toEqual(before);
  });

  it('says once that it cannot connect to an unreachable server, naming host and port', async () => {
    // A port nothing listens on: connection refused at once.
    const result = await runCli(['runs'], { env: { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/nowhere' } });
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toBe(
      'waybill runs: cannot connect to PostgreSQL at 127.0.0.1:1/nowhere: connect ECONNREFUSED 127.0.0.1:1\n',
    );
    expect(existsSync('nowhere')).toBe(false);
  });
});
