/**
 * `waybill seed-demo`: a synthetic history written in bulk, to try the dashboard at scale. It is not a store
 * operation (nothing in the product writes history it did not make), so it lives here, beside the store:
 * the plan (plan.ts) is shared, and each backend's rows go in through that backend's own bulk insert
 * (sqlite.ts, postgres.ts) on the store's connection. Going through the store's public methods instead
 * would write every row with the present time and cost a transaction per step: a week of history, or a
 * million rows, could not be made that way.
 */
import type { PostgresStore } from '../postgres/index';
import { skewSeconds } from '../postgres/skew';
import type { SqliteStore } from '../sqlite/index';
import type { SeedOptions, SeedReport } from './plan';
import { seedPostgres } from './postgres';
import { seedSqlite } from './sqlite';

export type { SeedOptions, SeedReport } from './plan';
export { SEED_WORKERS, SEED_WORKFLOW, seedPlan } from './plan';

/** onProgress gets the committed rows written so far, of the total. ConflictError when the prefix was seeded before. */
export async function seedDemo(
  store: SqliteStore | PostgresStore,
  options: SeedOptions,
  onProgress?: (done: number, total: number) => void,
): Promise<SeedReport> {
  if (store.dialect === 'sqlite') return seedSqlite(store.db, options, store.clock.now() / 1000, onProgress);
  return seedPostgres(store.pool, options, skewSeconds(store.clock), onProgress);
}
