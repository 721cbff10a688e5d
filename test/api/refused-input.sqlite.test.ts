/** Input no store can keep, refused over HTTP on a real SQLite file (see test/api/refused-input.ts). */
import Database from 'better-sqlite3';
import { makeTempDir } from '../support/tmp';
import { refusedInputSuite } from './refused-input';

refusedInputSuite('SQLite', async () => {
  const dir = makeTempDir('waybill-api-refused-');
  const file = dir.file('s.db');
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
    close: async () => dir.remove(),
  };
});
