/** Approvals and signals over HTTP on a real SQLite file (see test/suites/api-waits.ts). */
import Database from 'better-sqlite3';
import { waitsApiSuite } from '../suites/api-waits';
import { makeTempDir } from '../support/tmp';

waitsApiSuite('SQLite', async () => {
  const dir = makeTempDir('waybill-api-waits-db-');
  const file = dir.file('w.db');
  return {
    url: `file:${file}`,
    async rows(sql) {
      const db = new Database(file, { readonly: true });
      try {
        return db.prepare(sql).all();
      } finally {
        db.close();
      }
    },
    async close() {
      dir.remove();
    },
  };
});
