/**
 * Drizzle's queries on a SQLite connection use the statement kept for their text (connection.ts,
 * keepingStatements): a query built again is not compiled again, and a kept statement Drizzle once read as arrays
 * answers objects to a query that asks for them.
 */
import Database from 'better-sqlite3';
import { eq, sql } from 'drizzle-orm';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../lib/clock';
import { runs } from '../../lib/store/schema/sqlite';
import { openSqliteStore } from '../../lib/store/sqlite';
import { openSqliteConnection, type SqliteConnection } from '../../lib/store/sqlite/connection';
import { makeTempDir } from '../support/tmp';

describe('Drizzle on a SQLite connection', () => {
  let c: SqliteConnection;
  let compiled: Map<string, number>;
  let restore: () => void;

  beforeEach(async () => {
    const path = makeTempDir('waybill-kept-').file('kept.db');
    const store = openSqliteStore({ path, clock: new ManualClock(), synchronous: 'normal' });
    await store.createRun({ id: 'r1', workflow: 'wf', inputJson: '{}', totalSteps: 1 });
    await store.close();
    c = openSqliteConnection({ path, clock: new ManualClock(), synchronous: 'normal' });
    compiled = new Map();
    const proto = Database.prototype as unknown as { prepare: (this: Database.Database, text: string) => unknown };
    const original = proto.prepare;
    proto.prepare = function (this: Database.Database, text: string) {
      compiled.set(text, (compiled.get(text) ?? 0) + 1);
      return original.call(this, text);
    };
    restore = () => {
      proto.prepare = original;
    };
  });
  afterEach(() => {
    restore();
    c.db.close();
  });

  it('compiles a query built three times once', () => {
    const read = () => c.orm.select({ status: runs.status }).from(runs).where(eq(runs.id, 'r1')).all();
    for (let i = 0; i < 3; i++) expect(read()).toEqual([{ status: 'queued' }]);
    const text = c.orm.select({ status: runs.status }).from(runs).where(eq(runs.id, 'r1')).toSQL().sql;
    expect(compiled.get(text)).toBe(1);
  });

  it('answers objects from a statement it read as arrays before', () => {
    const query = c.orm.select({ id: runs.id }).from(runs);
    expect(query.all()).toEqual([{ id: 'r1' }]);
    expect(c.orm.all(sql.raw(query.toSQL().sql))).toEqual([{ id: 'r1' }]);
    expect(query.all()).toEqual([{ id: 'r1' }]);
    expect(compiled.get(query.toSQL().sql)).toBe(1);
  });
});
