/**
 * The pick's half of lib/domain/run-limits: whether a candidate run may start now under its workflow's
 * concurrency and rate limits, as SQL text both backends' picks put into their WHERE. A key is computed from
 * the stored input at the pick, as limitKeyOf computes it: no column to fill at the start, so a run started by
 * a control plane without the workflow's code is held like any other.
 *
 * Workflow names, key paths and counts are written into the text, not bound: each is checked by the domain's
 * rules (a workflow name is [a-z0-9-], a path [A-Za-z0-9_.]), and a worker's limits never change, so its pick
 * is still one prepared text.
 *
 * - running: the workflow's runs in status `running` under the candidate's key, itself left out (a run whose
 *   lease passed is taken over in its own place). A parked (`waiting`) run holds none.
 * - started: the workflow's runs first started within the period before now under the candidate's key; a run
 *   that started before (a resumed one) is not a start and passes.
 */
import type { RunLimits } from '../../domain/run-limits';
import type { Dialect, LimitUse } from '../contract';

const literal = (text: string): string => `'${text.replaceAll("'", "''")}'`;

/** The run's key under `path` in the dialect's JSON functions: limitKeyOf in SQL. */
export function limitKeySql(dialect: Dialect, alias: string, path: string | null): string {
  if (path === null) return "''";
  const input = `${alias}.input_json`;
  if (dialect === 'sqlite') {
    const at = literal(`$.${path}`);
    return `(CASE json_type(${input}, ${at}) WHEN 'text' THEN ${input} ->> ${at}
      WHEN 'integer' THEN ${input} -> ${at} WHEN 'real' THEN ${input} -> ${at}
      WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' ELSE '' END)`;
  }
  const at = literal(`{${path.split('.').join(',')}}`);
  return `(CASE jsonb_typeof(${input}::jsonb #> ${at}) WHEN 'string' THEN ${input}::jsonb #>> ${at}
      WHEN 'number' THEN ${input}::jsonb #>> ${at} WHEN 'boolean' THEN ${input}::jsonb #>> ${at} ELSE '' END)`;
}

/** How many of the workflow's runs hold a place under `run`'s concurrency key. */
export function runningUnderKeySql(dialect: Dialect, workflow: string, path: string | null, run: string): string {
  return `(SELECT count(*) FROM runs lr WHERE lr.status = 'running' AND lr.workflow = ${literal(workflow)}
      AND lr.id <> ${run}.id AND ${limitKeySql(dialect, 'lr', path)} = ${limitKeySql(dialect, run, path)})`;
}

/**
 * The workflow's runs started under `run`'s rate key since `since` (epoch seconds, SQL): how many, or (`oldest`)
 * when the first of them started, a period before the next slot.
 */
export function startedUnderKeySql(
  dialect: Dialect,
  workflow: string,
  path: string | null,
  run: string,
  since: string,
  what: 'count' | 'oldest' = 'count',
): string {
  return `(SELECT ${what === 'count' ? 'count(*)' : 'min(ls.started_at)'} FROM runs ls
      WHERE ls.workflow = ${literal(workflow)} AND ls.started_at > ${since}
      AND ${limitKeySql(dialect, 'ls', path)} = ${limitKeySql(dialect, run, path)})`;
}

/**
 * One read of what holds `run` (a runs row under that alias) back under `limits`, as the columns limitUse
 * answers: running and ckey, started, oldest and rkey, each null when that limit is not declared.
 */
export function limitUseSql(dialect: Dialect, workflow: string, limits: RunLimits, run: string, now: string): string {
  const { concurrency, rateLimit } = limits;
  const since = rateLimit ? `${now} - ${rateLimit.periodMs / 1000}` : '';
  return [
    concurrency ? runningUnderKeySql(dialect, workflow, concurrency.key, run) : 'NULL',
    concurrency ? limitKeySql(dialect, run, concurrency.key) : 'NULL',
    rateLimit ? startedUnderKeySql(dialect, workflow, rateLimit.key, run, since) : 'NULL',
    rateLimit ? startedUnderKeySql(dialect, workflow, rateLimit.key, run, since, 'oldest') : 'NULL',
    rateLimit ? limitKeySql(dialect, run, rateLimit.key) : 'NULL',
  ]
    .map((expression, i) => `${expression} AS ${['running', 'ckey', 'started', 'oldest', 'rkey'][i]}`)
    .join(', ');
}

/** limitUseSql's row as limitUse answers it. */
export function limitUseOf(
  row: { running: unknown; ckey: unknown; started: unknown; oldest: unknown; rkey: unknown },
  limits: RunLimits,
  nowS: number,
): LimitUse {
  return {
    nowS,
    ...(limits.concurrency ? { concurrency: { key: String(row.ckey), running: Number(row.running) } } : {}),
    ...(limits.rateLimit
      ? {
          rateLimit: {
            key: String(row.rkey),
            started: Number(row.started),
            oldestAt: row.oldest === null ? null : Number(row.oldest),
          },
        }
      : {}),
  };
}

/**
 * The condition a candidate `run` must meet under every limited workflow, `now` being the pick's time (SQL):
 * empty when no workflow holds anything back.
 */
export function withinLimitsSql(
  dialect: Dialect,
  limits: Record<string, RunLimits> | undefined,
  run: string,
  now: string,
): string {
  const conditions: string[] = [];
  for (const [workflow, { concurrency, rateLimit }] of Object.entries(limits ?? {})) {
    const holds: string[] = [];
    if (concurrency)
      holds.push(`${runningUnderKeySql(dialect, workflow, concurrency.key, run)} < ${concurrency.limit}`);
    if (rateLimit) {
      const since = `${now} - ${rateLimit.periodMs / 1000}`;
      holds.push(
        `(${run}.started_at IS NOT NULL OR ${startedUnderKeySql(dialect, workflow, rateLimit.key, run, since)} < ${rateLimit.limit})`,
      );
    }
    if (holds.length > 0) conditions.push(`(${run}.workflow <> ${literal(workflow)} OR (${holds.join(' AND ')}))`);
  }
  return conditions.join(' AND ');
}
