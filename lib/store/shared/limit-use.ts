/**
 * The limits' use of many runs read at one moment (RunStore.limitUses), as both backends read it in one read
 * transaction (sqlite/limit-use.ts, postgres/limit-use.ts), so the reasons a list of held runs gives agree:
 *
 * 1. the runs' rows: their workflow, and their keys' hints from their input;
 * 2. per workflow, one select of the pick's own columns for its runs (run-limits-sql.ts limitUseSql) and each run's
 *    places in its keys' lines (rate-line-sql.ts, place-line-sql.ts), at the one `now`;
 * 3. per rate key whose line waits on stored starts, one read of those starts, from the lowest its runs wait on to
 *    the highest (rateSlot says which: at most LINE_COUNTED + 1 of them).
 *
 * Each text depends on its workflow and limits only: the runs, their hints and the time are its values, so a backend
 * keeps it prepared (SQLite per connection, PostgreSQL by name), however many keys the runs shown are under.
 */
import { LINE_COUNTED, type RunLimits } from '../../domain/run-limits';
import type { Dialect, LimitUse, PlaceLine, RunLimitUse } from '../contract';
import { placeAheadSql, placeLineWith } from './place-line-sql';
import { hintOf, keyStartsSql, rateAheadSql, rateLineOf, ratePlace } from './rate-line-sql';
import { limitKeySql, limitUseOf, limitUseSql, limitUseWith } from './run-limits-sql';

/** A run's row as the groups are made from it. */
export interface LimitSubject {
  id: string;
  workflow: string;
  inputJson: string;
}

/** A workflow's runs, read by one select under its limits. */
export interface LimitGroup {
  workflow: string;
  limits: RunLimits;
  runs: LimitSubject[];
}

/** The runs that have limits (`limitsOf` their workflow), by workflow, in the order first met. */
export function limitGroups(
  runs: readonly LimitSubject[],
  limitsOf: (workflow: string) => RunLimits | undefined,
): LimitGroup[] {
  const groups = new Map<string, LimitGroup>();
  for (const run of runs) {
    const limits = limitsOf(run.workflow);
    if (!limits) continue;
    const group = groups.get(run.workflow);
    if (group) group.runs.push(run);
    else groups.set(run.workflow, { workflow: run.workflow, limits, runs: [run] });
  }
  return [...groups.values()];
}

/** `limits[workflow]`, the caller's record read as a map (a workflow named `constructor` is no prototype's). */
export const limitsIn =
  (limits: Readonly<Record<string, RunLimits>>) =>
  (workflow: string): RunLimits | undefined =>
    Object.hasOwn(limits, workflow) ? limits[workflow] : undefined;

/** A group's runs as its select takes them: each id with its rate key's hint and its concurrency key's. */
export function groupValues(group: LimitGroup): [id: string, rateHint: string | null][] {
  const { rateLimit } = group.limits;
  return group.runs.map((run) => [run.id, rateLimit ? hintOf(run.inputJson, rateLimit.key) : null]);
}

/**
 * A group's statement, the runs table under `alias`: `from` is its FROM, the runs joined to groupValues' rows (a CTE
 * of `runs`' own when one is given), whose hint is `rateHint` (SQL); every figure at `now` (SQL).
 * Its rows are what judged() reads.
 */
export function limitUseStatement(
  dialect: Dialect,
  group: Pick<LimitGroup, 'workflow' | 'limits'>,
  sql: { runs: string | null; from: string; alias: string; now: string; rateHint: string },
): string {
  const { workflow, limits } = group;
  const { alias } = sql;
  const ctes = [sql.runs, limitUseWith(dialect, workflow, limits, sql.now), placeLineWith(dialect, workflow, limits)]
    .filter(Boolean)
    .join(',\n  ');
  // `now` is a column too, so that the statement names its value whatever the limits read (a parameter no statement
  // names has no type on PostgreSQL).
  return `${ctes === '' ? '' : `WITH ${ctes}\n`}SELECT ${alias}.id AS id, ${sql.now} AS now, ${limitUseSql(dialect, limits, alias)},
      ${alias}.started_at AS "ownStart", ${rateAheadSql(dialect, limits, alias, sql.rateHint)} AS ahead,
      ${placeAheadSql(dialect, limits, alias)} AS "placeAhead"
    FROM ${sql.from}`;
}

/** limitUseStatement's row. */
export type LimitUseRow = Parameters<typeof limitUseOf>[0] & {
  id: string;
  ownStart: unknown;
  ahead: unknown;
  placeAhead: unknown;
};

/** A run's use as its group's row says it, before the starts its rate line waits on are read. */
export interface Judged {
  group: LimitGroup;
  use: LimitUse;
  at: ReturnType<typeof ratePlace>;
  placeLine: PlaceLine | null;
}

export function judged(group: LimitGroup, row: LimitUseRow, nowS: number): Judged {
  const use = limitUseOf(row, group.limits, nowS);
  const ahead = row.placeAhead === null ? null : Number(row.placeAhead);
  return {
    group,
    use,
    at: ratePlace(group.limits, use, row),
    placeLine: ahead === null ? null : { ahead, atLeast: ahead >= LINE_COUNTED },
  };
}

/**
 * One read of stored starts under a rate key: `count` from the `offset`-th oldest in the window, the key read from
 * the row of `runId` (a run under it).
 */
export interface StartsRead {
  group: LimitGroup;
  runId: string;
  offset: number;
  count: number;
}

/** Which line a run's rate slot is in: its workflow's, under its key. */
const lineOf = ({ group, use }: Judged) => JSON.stringify([group.workflow, use.rateLimit?.key ?? null]);

/** The starts the runs' rate lines wait on, one read per line: from the lowest start any of its runs waits on. */
export function startsToRead(runs: ReadonlyMap<string, Judged>): Map<string, StartsRead> {
  const reads = new Map<string, StartsRead>();
  for (const [runId, judged] of runs) {
    const nth = judged.at?.nth;
    if (nth == null) continue;
    const line = lineOf(judged);
    const read = reads.get(line);
    if (!read) {
      reads.set(line, { group: judged.group, runId, offset: nth - 1, count: 1 });
      continue;
    }
    const from = Math.min(read.offset, nth - 1);
    read.count = Math.max(read.offset + read.count, nth) - from;
    read.offset = from;
  }
  return reads;
}

/**
 * A StartsRead's statement for a group's workflow and rate key, every value SQL (`runId`, `since`, `offset`,
 * `count`): the starts under the key of the runs row `runId` names, as the pick counts them, as column `at`.
 */
export function startsSelect(
  dialect: Dialect,
  group: Pick<LimitGroup, 'workflow' | 'limits'>,
  values: { runId: string; since: string; offset: string; count: string },
): string {
  const path = group.limits.rateLimit!.key;
  const key = `(SELECT ${limitKeySql(dialect, 'kr', path)} FROM runs kr WHERE kr.id = ${values.runId})`;
  return keyStartsSql(dialect, group.workflow, path, key, values.since, values.offset, values.count);
}

/** The window's start (epoch seconds) a group's rate line counts from, at `nowS`. */
export function windowSince(group: LimitGroup, nowS: number): number {
  return nowS - group.limits.rateLimit!.periodMs / 1000;
}

/** Each run's answer, its rate slot from its line's starts (`starts`: each read's `at`s, oldest first, by line). */
export function limitUsesOf(
  runs: ReadonlyMap<string, Judged>,
  reads: ReadonlyMap<string, StartsRead>,
  starts: ReadonlyMap<string, number[]>,
): Map<string, RunLimitUse> {
  const out = new Map<string, RunLimitUse>();
  for (const [runId, judged] of runs) {
    const { group, use, at, placeLine } = judged;
    if (!at) {
      out.set(runId, { ...use, rateLine: null, placeLine });
      continue;
    }
    const line = lineOf(judged);
    const read = reads.get(line);
    const nthAt = at.nth === null || !read ? null : (starts.get(line)?.[at.nth - 1 - read.offset] ?? null);
    out.set(runId, { ...use, rateLine: rateLineOf(group.limits, use, at, nthAt), placeLine });
  }
  return out;
}
