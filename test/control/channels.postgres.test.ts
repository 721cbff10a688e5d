/** The three ways in to every operator operation, on a real PostgreSQL schema of its own (see test/suites/control-channels.ts). */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { describe, it } from 'vitest';
import { channelSuite } from '../suites/control-channels';
import { postgresAvailable, TEST_DATABASE_URL } from '../support/postgres';

const reachable = await postgresAvailable('test/control/channels.postgres');

if (!reachable) {
  describe.skip('one operation, three ways in, on PostgreSQL', () => it('needs PostgreSQL', () => undefined));
} else {
  channelSuite('PostgreSQL', async () => {
    const schema = `wb_control_${randomBytes(6).toString('hex')}`;
    const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await admin.connect();
    const url = new URL(TEST_DATABASE_URL);
    url.searchParams.set('schema', schema);
    const inSchema = async <T>(fn: () => Promise<T>): Promise<T> => {
      await admin.query(`SET search_path TO "${schema}"`);
      try {
        return await fn();
      } finally {
        await admin.query('RESET search_path');
      }
    };
    return {
      url: url.toString(),
      async exec(sql, params = []) {
        let n = 0;
        await inSchema(() =>
          admin.query(
            sql.replace(/\?/g, () => `$${++n}`),
            params,
          ),
        );
      },
      async dump() {
        return inSchema(async () => {
          const { rows: tables } = await admin.query<{ name: string }>(
            'SELECT table_name AS name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name',
            [schema],
          );
          const out: Record<string, unknown[]> = {};
          for (const { name } of tables) out[name] = (await admin.query(`SELECT * FROM "${name}" ORDER BY 1`)).rows;
          return out;
        });
      },
      async close() {
        await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
        await admin.end();
      },
    };
  });
}
