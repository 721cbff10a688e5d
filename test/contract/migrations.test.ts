/**
 * Which stores a Waybill refuses to open, on every backend: one migrated by a newer Waybill (an old worker on
 * it ran a side effect three times and committed it zero times), and one whose migration ledger is gone or
 * damaged while Waybill's tables are there (migrating it again would run over live tables). Each refusal is
 * a StoreRefusedError that names what is wrong, and changes nothing. The article's own three-table store is
 * still adopted (test/crash/article.test.ts, test/postgres/store.test.ts).
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Checkpoint } from '../../lib/checkpoint/checkpoint';
import { StoreRefusedError } from '../../lib/errors';
import { migrationsOf } from '../../lib/store/migrate/runner';
import { openSqliteStore } from '../../lib/store/sqlite';
import { runCli } from '../cli/support';
import { backends, type StoreHandle } from '../support/backends';
import { tempDir } from '../support/tmp';

const list = await backends();

describe.each(list)('migration ledger on $name', (backend) => {
  let h: StoreHandle;
  const latest = migrationsOf(backend.name === 'sqlite' ? 'sqlite' : 'pg').at(-1)!.tag;

  beforeEach(async () => {
    h = await backend.open();
    await new Checkpoint(h.store, 'run-1').runOnce('run-1:step:0', () => 'sent', { step: 0 });
  });
  afterEach(() => h.close());

  const refusal = async () => {
    const error = await h.reopen().then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(StoreRefusedError);
    return error as StoreRefusedError;
  };
  it('refuses a store with a migration it does not know, naming both versions, and changes nothing', async () => {
    // A newer Waybill applied one more migration: an older one (this) must not run on it.
    await h.exec(`INSERT INTO waybill_migrations (tag, hash, applied_at) VALUES ('9999_from_a_newer_waybill', 'x', 1)`);
    const error = await refusal();
    expect(error.code).toBe('STORE_TOO_NEW');
    expect(error.message).toContain('migrated by a newer Waybill');
    expect(error.message).toContain(`up to ${latest}`);
    expect(error.message).toContain('9999_from_a_newer_waybill');
    expect(error.message).toContain('nothing was changed');
    expect((await h.store.listCommitted('run-1')).map((r) => r.idemKey)).toEqual(['run-1:step:0']);
    // The same store opened once the newer migration is gone from the ledger (i.e. by the newer Waybill) opens.
    await h.exec(`DELETE FROM waybill_migrations WHERE tag = '9999_from_a_newer_waybill'`);
    const reopened = await h.reopen();
    expect((await reopened.getCommitted('run-1:step:0'))?.resultJson).toBe('"sent"');
  });

  it('refuses a store whose ledger is empty or missing while Waybill’s tables are there, rows kept', async () => {
    await h.exec('DELETE FROM waybill_migrations');
    const emptied = await refusal();
    expect(emptied.code).toBe('STORE_LEDGER_DAMAGED');
    expect(emptied.message).toMatch(
      /has Waybill's tables \(.*runs.*\) but its migration ledger waybill_migrations is missing or empty/,
    );

    await h.exec('DROP TABLE waybill_migrations');
    expect((await refusal()).code).toBe('STORE_LEDGER_DAMAGED');
    // Not set aside as the article's, not re-created: the committed row is where it was.
    expect((await h.store.getCommitted('run-1:step:0'))?.resultJson).toBe('"sent"');
    expect((await h.store.listCommitted('run-1')).map((r) => r.idemKey)).toEqual(['run-1:step:0']);
  });
});

describe('SQLite ledger damage and the CLI', () => {
  const migrated = () => {
    const dir = tempDir('waybill-ledger-');
    const path = dir.file('store.db');
    const store = openSqliteStore({ path });
    return { path, store };
  };

  it('refuses a file whose ledger table page is zeroed (the primary key index alone still answered)', async () => {
    const { path, store } = migrated();
    await new Checkpoint(store, 'run-1').runOnce('run-1:step:0', () => 'sent', { step: 0 });
    await store.close();
    const db = new Database(path);
    const { rootpage } = db
      .prepare<[], { rootpage: number }>(
        "SELECT rootpage FROM sqlite_master WHERE type = 'table' AND name = 'waybill_migrations'",
      )
      .get()!;
    const pageSize = db.pragma('page_size', { simple: true }) as number;
    db.pragma('wal_checkpoint(TRUNCATE)');
    db.close();
    const fd = openSync(path, 'r+');
    writeSync(fd, Buffer.alloc(pageSize), 0, pageSize, (rootpage - 1) * pageSize);
    closeSync(fd);

    const error = (() => {
      try {
        openSqliteStore({ path }).close();
        return null;
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(StoreRefusedError);
    expect((error as StoreRefusedError).code).toBe('STORE_LEDGER_DAMAGED');
    expect((error as Error).message).toContain('waybill_migrations is unreadable');
  });

  it('`waybill runs` on a store migrated by a newer Waybill exits 2 naming both versions', async () => {
    const { path, store } = migrated();
    store.db
      .prepare(`INSERT INTO waybill_migrations (tag, hash, applied_at) VALUES ('9999_from_a_newer_waybill', 'x', 1)`)
      .run();
    await store.close();
    const latest = migrationsOf('sqlite').at(-1)!.tag;
    const result = await runCli(['--db', `file:${path}`, 'runs']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('migrated by a newer Waybill');
    expect(result.stderr).toContain(latest);
    expect(result.stderr).toContain('9999_from_a_newer_waybill');
    expect(result.stdout).toBe('');
  });
});
