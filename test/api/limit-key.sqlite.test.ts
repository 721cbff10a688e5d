/** A limit key that is an object or an array, refused at the edges on a real SQLite file (see test/api/limit-key.ts). */
import Database from 'better-sqlite3';
import { makeTempDir } from '../support/tmp';
import { limitKeySuite } from './limit-key';

limitKeySuite('SQLite', async () => {
  const dir = makeTempDir('waybill-api-limit-key-');
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
