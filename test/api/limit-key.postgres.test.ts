/** A limit key that is an object or an array, refused at the edges on a PostgreSQL schema (see test/api/limit-key.ts). */
import { describe, it } from 'vitest';
import { createSchema, postgresAvailable } from '../support/postgres';
import { limitKeySuite } from './limit-key';

const reachable = await postgresAvailable('test/api/limit-key.postgres');

if (!reachable) {
  describe.skip('a limit key that is an object or an array, at the edges on PostgreSQL', () =>
    it('needs PostgreSQL', () => undefined));
} else {
  limitKeySuite('PostgreSQL', async () => {
    const schema = await createSchema('wb_api_limit_key');
    return {
      url: schema.url,
      async rows(sql) {
        await schema.admin.query(`SET search_path TO "${schema.name}"`);
        try {
          return await schema.admin.query(sql);
        } finally {
          await schema.admin.query('RESET search_path');
        }
      },
      close: () => schema.drop(),
    };
  });
}
