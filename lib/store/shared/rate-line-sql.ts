/**
 * Where a queued run stands for a first start under its workflow's rate key, for the reason a held run gives
 * (lib/control/queued.ts): how many runs the pick would start there before it, and the stored start its slot
 * waits on (lib/domain/run-limits.ts rateSlot says which). Read for a view, never by the pick. The key and the
 * starts are the pick's own (run-limits-sql.ts limitKeySql, startsSql), so the line waits on what the pick counts.
 */
import { LINE_COUNTED, limitKeyOf, type RunLimits, rateSlot } from '../../domain/run-limits';
import type { Dialect, LimitUse, RateLine } from '../contract';
import { limitKeySql, startsSql, USE_PLACES } from './run-limits-sql';

/**
 * limitUse's `ahead` column for `run` (a runs row, under `alias` in a statement with limitUseWith's CTEs): how many
 * of its workflow's queued runs never started, under its rate key, the pick takes before it, counted up to
 * LINE_COUNTED; NULL when no rate limit is given. In the pick's ORDER BY (aheadInPickSql). A run that started before
 * takes no slot (the pick exempts it), so it stands in no one's way; nor does one its workflow's concurrency limit
 * holds now (its key has the limit's places taken): the pick passes it by, so a slot can come before it is let go,
 * and the time said stays the earliest.
 *
 * Reading a key parses the input, and under many keys a run's line is a few runs among thousands: so when the
 * key is text that every input under it holds as it is (keyHint), a run whose input lacks that text is passed
 * over before its key is read. `hint` is that text as SQL (a value of the run's, NULL when it has none), so the
 * statement is one text for every key. SQLite, which keeps no statistics, is told to read the queued runs by
 * status, as the pick's places are (run-limits-sql.ts): by workflow it would read the workflow's history for each
 * held run shown.
 */
export function rateAheadSql(dialect: Dialect, limits: RunLimits, alias: string, hint: string): string {
  if (!limits.rateLimit) return 'NULL';
  const path = limits.rateLimit.key;
  const queued = dialect === 'sqlite' ? 'runs la INDEXED BY runs_status_updated' : 'runs la';
  const { concurrency } = limits;
  const free = concurrency
    ? `AND ${limitKeySql(dialect, 'la', concurrency.key)} NOT IN (SELECT h.k FROM ${USE_PLACES} h
        GROUP BY h.k HAVING count(*) >= ${concurrency.limit})`
    : '';
  return `(SELECT count(*) FROM (SELECT 1 FROM ${queued} WHERE la.workflow = ${alias}.workflow AND la.status = 'queued'
      AND la.started_at IS NULL AND la.id <> ${alias}.id AND ${aheadInPickSql(dialect, 'la', alias)}
      ${hintSql(dialect, 'la', path, hint)} AND ${limitKeySql(dialect, 'la', path)} = ${limitKeySql(dialect, alias, path)} ${free}
      LIMIT ${LINE_COUNTED}) ahead)`;
}

/**
 * A key every input under it holds as it is, or null. A key with a letter is a string's or a boolean's (a number's
 * text has none), and letters, digits and `_ . : @ / + -` go into JSON text as they are: every input is stored as
 * JSON.stringify writes it (lib/engine/runs.ts, the loops' declarations), which escapes none of them. A number, a
 * space, a quote or an escape gives no hint.
 */
function keyHint(key: string): string | null {
  return /^[\p{L}\p{N}_.:@/+-]{1,256}$/u.test(key) && /\p{L}/u.test(key) ? key : null;
}

/**
 * The run's keyHint under `path`, from its stored input: what a line's statement is given as `hint` (null: none).
 */
export function hintOf(inputJson: string, path: string | null): string | null {
  return path === null ? null : keyHint(limitKeyOf(inputJson, path));
}

/** keyHint's condition on the runs row `table` (`hint`: SQL, NULL for none), or nothing when no key is read. */
function hintSql(dialect: Dialect, table: string, path: string | null, hint: string): string {
  if (path === null) return '';
  return `AND (${hint} IS NULL OR ${dialect === 'postgres' ? 'strpos' : 'instr'}(${table}.input_json, ${hint}) > 0)`;
}

/**
 * Whether the runs row `ahead` comes before `run` in the pick's ORDER BY: priority, then age, then id (on PostgreSQL
 * ids in "C" order, as the pick sorts them).
 */
function aheadInPickSql(dialect: Dialect, ahead: string, run: string): string {
  const id = (table: string) => (dialect === 'postgres' ? `${table}.id COLLATE "C"` : `${table}.id`);
  return `(${ahead}.priority > ${run}.priority OR (${ahead}.priority = ${run}.priority AND (${ahead}.created_at < ${run}.created_at
        OR (${ahead}.created_at = ${run}.created_at AND ${id(ahead)} < ${id(run)}))))`;
}

/**
 * `count` of `workflow`'s starts since `since` (epoch seconds, SQL) under the rate key `key` (SQL: the key of a runs
 * row, as limitKeySql reads it), oldest first from the `offset`-th (0: the oldest), as column `at`: the pick's own
 * starts (startsSql), the ones a line's slots wait on. `offset` and `count` are SQL too.
 */
export function keyStartsSql(
  dialect: Dialect,
  workflow: string,
  path: string | null,
  key: string,
  since: string,
  offset: string,
  count: string,
): string {
  return `SELECT s.started_at AS at FROM (${startsSql(dialect, workflow, path, since)}) s
      WHERE s.k = ${key} ORDER BY s.started_at LIMIT ${count} OFFSET ${offset}`;
}

/**
 * The run's place in line from limitUse's row (`ahead`: rateAheadSql's count; `ownStart`: its started_at), and
 * which start its slot waits on; null when no rate limit is given or the run started before (nothing to wait for).
 */
export function ratePlace(
  limits: RunLimits,
  use: LimitUse,
  row: { ahead: unknown; ownStart: unknown },
): { place: number; atLeast: boolean; nth: number | null; periods: number } | null {
  if (!limits.rateLimit || !use.rateLimit || row.ownStart !== null) return null;
  const ahead = Number(row.ahead);
  const place = ahead + 1;
  return { place, atLeast: ahead >= LINE_COUNTED, ...rateSlot(limits.rateLimit.limit, use.rateLimit.started, place) };
}

/** The line as limitUse answers it: `nthAt`, the start read for `nth` (null: none, or none was to be read). */
export function rateLineOf(
  limits: RunLimits,
  use: LimitUse,
  at: { place: number; atLeast: boolean; periods: number },
  nthAt: number | null,
): RateLine {
  const periodS = limits.rateLimit!.periodMs / 1000;
  const slotAt = (nthAt === null ? use.nowS : nthAt + periodS) + at.periods * periodS;
  return { place: at.place, atLeast: at.atLeast, slotAt };
}
