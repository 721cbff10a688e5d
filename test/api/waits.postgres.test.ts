/** Approvals and signals over HTTP on a real PostgreSQL schema of its own (see test/suites/api-waits.ts). */
import { describe, it } from 'vitest';
import { waitsApiSuite } from '../suites/api-waits';
import { createSchema, postgresAvailable } from '../support/postgres';

const reachable = await postgresAvailable('test/api/waits.postgres');

if (!reachable) {
  describe.skip('approvals and signals over HTTP on PostgreSQL', () => it('needs PostgreSQL', () => undefined));
} else {
  waitsApiSuite('PostgreSQL', async () => {
    const schema = await createSchema('wb_api_waits');
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
