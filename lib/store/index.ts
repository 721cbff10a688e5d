/**
 * Opens the backend a URL names: `file:<path>` for SQLite, `postgres://…` for PostgreSQL.
 */
import type { Clock } from '../clock';
import { InvalidInputError } from '../errors';
import { openSqliteStore } from './sqlite';
import type { Store } from './types';

export interface OpenStoreOptions {
  synchronous?: 'full' | 'normal';
  clock?: Clock;
}

export async function openStore(url: string, options: OpenStoreOptions = {}): Promise<Store> {
  if (url.startsWith('file:')) {
    const path = url.slice('file:'.length).replace(/^\/\/(?=\/)/, '');
    if (!path) throw new InvalidInputError(`DATABASE_URL ${url} names no file`);
    return openSqliteStore({ path, synchronous: options.synchronous, clock: options.clock });
  }
  if (/^postgres(ql)?:\/\//.test(url)) {
    // `?schema=name` keeps Waybill's tables in a schema of their own (created if missing), as Prisma's URLs do.
    const parsed = new URL(url);
    const schema = parsed.searchParams.get('schema') ?? undefined;
    parsed.searchParams.delete('schema');
    const { openPostgresStore } = await import('./postgres');
    return openPostgresStore({ url: schema ? parsed.toString() : url, schema, clock: options.clock });
  }
  throw new InvalidInputError(`DATABASE_URL must start with file: or postgres://, got ${JSON.stringify(url.slice(0, 40))}`);
}

export type * from './types';
