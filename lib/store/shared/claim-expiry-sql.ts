/**
 * The claim-expiry rule of lib/domain/claim-expiry as a Drizzle `sql` fragment, for the reads of either
 * backend: `coalesce(lease_expires_at, claimed_at + TTL)`. It takes the dialect's claims table (or the columns
 * under an alias, `claimTimes('c.')`) and the TTL in seconds as that dialect binds it (PostgreSQL wants a
 * `::float8`, so its callers pass `sql\`${ttlS}::float8\``). The PL/pgSQL claim (postgres/functions/claim.ts)
 * puts claimExpiresAtText into its body; the older texts in drizzle/pg's migrations keep their own copy.
 */
import { type SQL, type SQLWrapper, sql } from 'drizzle-orm';
import { DIED_CLAIM_DETAIL } from '../../domain/claim-expiry';

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
 * What a takeover's `expired` event says of the holder it replaced: its lease passed, or it `died` (its claim was
 * one markWorkerDead expired, expiredByDeathText). A dead holder's lease had not passed: the proof of its death
 * ended it, and the timeline should say so. SQLite writes this; the PL/pgSQL claim writes takeoverDetailText, its
 * twin below; the step page's line (lib/engine/attempt-note.ts) tells the two apart by it.
 */
export function takeoverDetail(holder: string | null, died: boolean): string {
  return died ? `worker ${holder} ${DECLARED_DEAD}` : `lease of ${holder ?? OUTSIDE_CLIENT} passed; taken over`;
}

const DECLARED_DEAD = 'was declared dead; taken over';
const OUTSIDE_CLIENT = 'an outside client';
const literal = (text: string) => `'${text.replaceAll("'", "''")}'`;

/** takeoverDetail as SQL text: `holder` and `died` are expressions of the statement it goes into. */
export const takeoverDetailText = (holder: string, died: string): string =>
  `CASE WHEN ${died} THEN 'worker ' || ${holder} || ${literal(` ${DECLARED_DEAD}`)}
      ELSE 'lease of ' || coalesce(${holder}, ${literal(OUTSIDE_CLIENT)}) || ' passed; taken over' END`;

/**
 * Whether the claim of `key` held by `worker` on `attempt` (SQL expressions, either dialect) was expired by its
 * worker's death: markWorkerDead's `expired` event for that holder and attempt, the one that ends in
 * DIED_CLAIM_DETAIL. The holder and attempt pin it to this claim: a takeover's own event names its taker and
 * the taker's attempt too, and that claim, if its lease passes, did not die. Read on a takeover only, through
 * the events' index on the key. Over events already read: lib/domain/claim-expiry.ts expiredByDeath.
 */
export const expiredByDeathText = (key: string, worker: string, attempt: string): string => {
  const n = DIED_CLAIM_DETAIL.length;
  return `EXISTS (SELECT 1 FROM step_events e WHERE e.idem_key = ${key} AND e.outcome = 'expired'
      AND e.worker_id = ${worker} AND e.attempt = ${attempt}
      AND length(e.detail) >= ${n} AND substr(e.detail, length(e.detail) - ${n - 1}) = ${literal(DIED_CLAIM_DETAIL)})`;
};
