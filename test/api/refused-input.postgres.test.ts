/** Input no store can keep, refused over HTTP on a PostgreSQL schema of its own (see test/api/refused-input.ts). */
import { describe, it } from 'vitest';
import { createSchema, postgresAvailable } from '../support/postgres';
import { refusedInputSuite } from './refused-input';

const reachable = await postgresAvailable('test/api/refused-input.postgres');

if (!reachable) {
  describe.skip('input no store can keep, over HTTP on PostgreSQL', () => it('needs PostgreSQL', () => undefined));
} else {
  refusedInputSuite('PostgreSQL', async () => {
    const schema = await createSchema('wb_api_refused');
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
