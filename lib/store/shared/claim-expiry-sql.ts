/**
 * The claim-expiry rule of lib/domain/claim-expiry as a Drizzle `sql` fragment, for the reads of either
 * backend: `coalesce(lease_expires_at, claimed_at + TTL)`. It takes the dialect's claims table (or the columns
 * under an alias, `claimTimes('c.')`) and the TTL in seconds as that dialect binds it (PostgreSQL wants a
 * `::float8`, so its callers pass `sql\`${ttlS}::float8\``). The PL/pgSQL claim (postgres/functions/claim.ts)
 * puts claimExpiresAtText into its body; the older texts in drizzle/pg's migrations keep their own copy.
 */
import { type SQL, type SQLWrapper, sql } from 'drizzle-orm';

/** The two columns the rule reads: a claims table of either schema, or `claimTimes(alias)`. */
export interface ClaimTimes {
  leaseExpiresAt: SQLWrapper;
  claimedAt: SQLWrapper;
}

/** The claims columns by name, under a table alias such as `'c.'` (or none). */
export const claimTimes = (alias = ''): ClaimTimes => ({
  leaseExpiresAt: sql.raw(`${alias}lease_expires_at`),
  claimedAt: sql.raw(`${alias}claimed_at`),
});

/** When the claim expires, in epoch seconds. */
export function claimExpiresAtSql(claim: ClaimTimes, ttlS: SQLWrapper | number): SQL {
  return sql`coalesce(${claim.leaseExpiresAt}, ${claim.claimedAt} + ${ttlS})`;
}

/** Whether the claim has expired by `now`: inclusive, as claimExpired is. */
export function claimExpiredSql(claim: ClaimTimes, ttlS: SQLWrapper | number, now: SQLWrapper | number): SQL {
  return sql`${claimExpiresAtSql(claim, ttlS)} <= ${now}`;
}

/**
 * The same expression as SQL text, for statements prepared from strings (SQLite's prepared reads, raw
 * PostgreSQL): `ttl` is the placeholder the statement binds the TTL in seconds to (`?`, `@ttl`, `$2::float8`).
 */
export const claimExpiresAtText = (ttl: string, alias = ''): string =>
  `coalesce(${alias}lease_expires_at, ${alias}claimed_at + ${ttl})`;

/**
 * What the `expired` event of a dead worker's claim says after `worker <id> died (<reason>); ` (markWorkerDead,
 * both backends): the claim expires then, so the step's next claim takes it over and is told it is in doubt.
 */
export const DIED_CLAIM_DETAIL = 'its claim expired: the step runs again, told it is in doubt';
