/**
 * A throwaway store beside a given one, for experiments that must not touch the user's runs (`waybill
 * drill`): a fresh SQLite file in a temporary directory, or a fresh schema on the same PostgreSQL server (so
 * the experiment measures that server). Removed with everything in it by remove().
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface ScratchStore {
  /** A DATABASE_URL naming the throwaway store. */
  url: string;
  /** What it is, for the user: a file path or `schema x on host:port/db`. */
  where: string;
  remove(): Promise<void>;
}

export async function scratchStoreBeside(url: string, prefix = 'waybill_scratch'): Promise<ScratchStore> {
  if (/^postgres(ql)?:\/\//.test(url)) {
    const schema = `${prefix}_${randomBytes(5).toString('hex')}`;
    const parsed = new URL(url);
    parsed.searchParams.set('schema', schema);
    const admin = new URL(url);
    admin.searchParams.delete('schema');
    return {
      url: parsed.toString(),
      where: `schema ${schema} on ${parsed.host}${parsed.pathname}`,
      async remove() {
        const { default: pg } = await import('pg');
        const client = new pg.Client({ connectionString: admin.toString() });
        // A session the server ends fails the statement; unheard, its 'error' would end the process.
        client.on('error', () => undefined);
        await client.connect();
        try {
          await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
        } finally {
          await client.end();
        }
      },
    };
  }
  const dir = mkdtempSync(join(tmpdir(), `${prefix.replace(/_/g, '-')}-`));
  const file = join(dir, 'store.db');
  return { url: `file:${file}`, where: file, remove: async () => rmSync(dir, { recursive: true, force: true }) };
}
