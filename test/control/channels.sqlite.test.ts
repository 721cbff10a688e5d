/** The three ways in to every operator operation, on a real SQLite file (see test/suites/control-channels.ts). */
import Database from 'better-sqlite3';
import { channelSuite } from '../suites/control-channels';
import { makeTempDir } from '../support/tmp';

channelSuite('SQLite', async () => {
  const dir = makeTempDir('waybill-control-');
  const file = dir.file('w.db');
  const open = () => new Database(file);
  return {
    url: `file:${file}`,
    async exec(sql, params = []) {
      const db = open();
      try {
        db.prepare(sql).run(...params);
      } finally {
        db.close();
      }
    },
    async dump() {
      const db = open();
      try {
        const tables = db
          .prepare<[], { name: string }>(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
          )
          .all();
        return Object.fromEntries(
          tables.map(({ name }) => [name, db.prepare(`SELECT * FROM "${name}" ORDER BY rowid`).all()]),
        );
      } finally {
        db.close();
      }
    },
    async close() {
      dir.remove();
    },
  };
});
