/**
 * The pick's half of lib/domain/run-limits: whether a candidate run may start now under its workflow's
 * concurrency and rate limits, as SQL text both backends' picks put into their WHERE. A key is computed from
 * the stored input at the pick, as limitKeyOf computes it: no column to fill at the start, so a run started by
 * a control plane without the workflow's code is held like any other.
 *
 * Which limits: a workflow's latest publication in the store (`waybill worker` publishes at its start, so the
 * newest deployment's declaration), the one the reason a held run gives reads too (lib/control/queued.ts); a
 * worker's own declaration only for a workflow the store has no publication of (a worker built on the library
 * that publishes nothing). pickLimits says which, once, for both backends.
 *
 * Workflow names, key paths and counts are written into the text, not bound: a published declaration is read
 * back through the domain's rules (readLimits: a workflow name is [a-z0-9-], a path [A-Za-z0-9_.], a count a
 * whole number), and a publication changes only when a worker starts, so a pick is still one prepared text.
 *
 * - place: a run of the workflow holds one under its key while it is `running` (a run whose lease passed too: it
 *   is taken over in its own place, so a candidate leaves itself out), or while its worker still has a step of
 *   it in hand after an operator paused, cancelled or resumed it: a claim on one of its keys whose lease has not
 *   passed. The run row cannot say so: a cancel and a resume drop its owner at once and a pause stops its lease's
 *   renewal, while the step in hand runs to its end (lib/engine/worker/execute.ts); the claim's lease keeper
 *   renews it until the step commits, and a dead worker's claims are released or pass. A parked (`waiting`) run
 *   holds none.
 * - start: the workflow's runs started within the period before now under the candidate's key, a retried or
 *   rerun run's earlier start among them; a run that started before (a resumed one) is not a start and passes.
 *
 * Cost: the pick runs inside the write lock (SQLite) or under the limits' lock (PostgreSQL), walking the held
 * runs in its order. So each set is read once per statement through an index of its own (the running runs by
 * runs_status_updated, the steps in hand from claims, the window's starts by runs_started), and a candidate
 * costs its key and two lookups in sets of keys: a pick follows what runs and what started in the window,
 * never the workflow's history, and never held runs times anything.
 */
import {
  limitsHold,
  type RunLimits,
  type RunLimitsDeclaration,
  resolveLimits,
  runLimitsSchema,
} from '../../domain/run-limits';
import type { Dialect, LimitUse } from '../contract';

const literal = (text: string): string => `'${text.replaceAll("'", "''")}'`;

/**
 * The run's key under `path` in the dialect's JSON functions: limitKeyOf in SQL. It must not fail on a stored text,
 * or one row fails every pick of its workflow. SQLite's JSON functions read a NUL or a lone surrogate escape but
 * fail on text that is no JSON, which json_valid (strict JSON, as JSON.parse reads it) makes `""` first.
 * PostgreSQL's jsonb refuses those escapes, so it reads the key in a function of its own
 * (postgres/functions/limit-key.ts).
 */
export function limitKeySql(dialect: Dialect, alias: string, path: string | null): string {
  if (path === null) return "''";
  const input = `${alias}.input_json`;
  if (dialect === 'postgres') return `waybill_limit_key(${input}, ${literal(`{${path.split('.').join(',')}}`)})`;
  const at = literal(`$.${path}`);
  return `(CASE WHEN NOT json_valid(${input}) THEN ''
    ELSE CASE json_type(${input}, ${at}) WHEN 'text' THEN ${input} ->> ${at}
      WHEN 'integer' THEN ${input} -> ${at} WHEN 'real' THEN ${input} -> ${at}
      WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' ELSE '' END END)`;
}

/**
 * The runs of `workflow` holding a place (see the header), each once with its key: columns `id`, `k`. The running
 * runs are read by their status alone, never through the workflow's history in runs_workflow_updated, which a
 * planner without statistics may prefer (SQLite, which Waybill never ANALYZEs; a PostgreSQL table before its first
 * autovacuum): SQLite is told runs_status_updated, PostgreSQL reads them in a subquery it cannot merge (OFFSET 0)
 * before the workflow is a condition. The others come from the live claims, each claim's run by its primary key in
 * a subquery of the select list, which no planner turns into a join that reads the runs by status instead (the
 * cancelled ones are history); a claim of another workflow's run, or of a run in another status, has no key there
 * (null) and is left out.
 */
export function placesSql(dialect: Dialect, workflow: string, path: string | null, now: string): string {
  const running =
    dialect === 'sqlite'
      ? `runs lr INDEXED BY runs_status_updated WHERE lr.status = 'running' AND`
      : `(SELECT id, workflow, input_json FROM runs WHERE status = 'running' OFFSET 0) lr WHERE`;
  return `SELECT lr.id, ${limitKeySql(dialect, 'lr', path)} AS k FROM ${running} lr.workflow = ${literal(workflow)}
    UNION SELECT held.id, held.k FROM (SELECT cl.run_id AS id, (SELECT ${limitKeySql(dialect, 'lc', path)} FROM runs lc
        WHERE lc.id = cl.run_id AND lc.status IN ('queued', 'paused', 'cancelled') AND lc.workflow = ${literal(workflow)}) AS k
      FROM claims cl WHERE cl.lease_expires_at > ${now}) held WHERE held.k IS NOT NULL`;
}

/**
 * The workflow's starts since `since` (epoch seconds, SQL), each with its key: columns `started_at`, `k`. Read by
 * runs_started, the window's range of the workflow's starts (named on SQLite, as placesSql says why), and beside
 * them the starts a retry or a rerun cleared (earlier_starts, kept by the store's trigger), each keyed by its run's
 * input as it is now.
 */
export function startsSql(dialect: Dialect, workflow: string, path: string | null, since: string): string {
  const byStart = dialect === 'sqlite' ? ' INDEXED BY runs_started' : '';
  return `SELECT ls.started_at, ${limitKeySql(dialect, 'ls', path)} AS k FROM runs ls${byStart}
      WHERE ls.workflow = ${literal(workflow)} AND ls.started_at > ${since}
    UNION ALL SELECT es.started_at, ${limitKeySql(dialect, 'le', path)} AS k FROM earlier_starts es
      JOIN runs le ON le.id = es.run_id WHERE es.workflow = ${literal(workflow)} AND es.started_at > ${since}`;
}

/** The CTE limitUseWith names the places in: columns `id`, `k`, as placesSql's. */
export const USE_PLACES = 'use_places';
/** The CTE limitUseWith names the window's starts in: columns `started_at`, `k`, as startsSql's. */
export const USE_STARTS = 'use_starts';

/**
 * The CTEs a read of held runs' use counts from (`name AS MATERIALIZED (…)`, comma-joined; empty for no limit): the
 * workflow's places under its concurrency key (USE_PLACES) and its starts in the rate window before `now` (USE_STARTS),
 * the pick's own (placesSql, startsSql), each read once a statement however many runs it judges and however many
 * subqueries count from it.
 */
export function limitUseWith(dialect: Dialect, workflow: string, limits: RunLimits, now: string): string {
  const { concurrency, rateLimit } = limits;
  return [
    concurrency ? `${USE_PLACES} AS MATERIALIZED (${placesSql(dialect, workflow, concurrency.key, now)})` : null,
    rateLimit
      ? `${USE_STARTS} AS MATERIALIZED (${startsSql(dialect, workflow, rateLimit.key, `${now} - ${rateLimit.periodMs / 1000}`)})`
      : null,
  ]
    .filter((cte) => cte !== null)
    .join(',\n  ');
}

/**
 * What holds `run` (a runs row under that alias) back under `limits`, as the columns limitUse answers: running and
 * ckey, started, oldest and rkey, each null when that limit is not declared. Counted from limitUseWith's CTEs, the
 * pick's own places and starts, so the reason counts what the pick counts.
 */
export function limitUseSql(dialect: Dialect, limits: RunLimits, run: string): string {
  const { concurrency, rateLimit } = limits;
  const ckey = concurrency ? limitKeySql(dialect, run, concurrency.key) : 'NULL';
  const rkey = rateLimit ? limitKeySql(dialect, run, rateLimit.key) : 'NULL';
  const starts = (what: string) => `(SELECT ${what} FROM ${USE_STARTS} s WHERE s.k = ${rkey})`;
  return [
    concurrency ? `(SELECT count(*) FROM ${USE_PLACES} h WHERE h.k = ${ckey} AND h.id <> ${run}.id)` : 'NULL',
    ckey,
    rateLimit ? starts('count(*)') : 'NULL',
    rateLimit ? starts('min(s.started_at)') : 'NULL',
    rkey,
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

/** withinLimitsSql's answer: the statement's CTEs (`name AS (…), …`, empty for none) and the candidate's condition. */
export interface WithinLimits {
  with: string;
  condition: string;
}

/**
 * The condition a candidate `run` must meet under every limited workflow, `now` being the pick's time (SQL, valid
 * anywhere in the statement, its CTEs included), with the CTEs it reads: both empty when nothing is held back.
 * Each workflow's places and starts are a CTE, read once; a candidate's key is then looked up among the keys that
 * have their limit's worth (a set built once, IN (…) on both backends). A candidate holding a place itself (a
 * running run whose lease passed, a resumed run whose step is still in hand) leaves itself out: its key is held
 * only when the others fill it, that is when the key has more places than the limit.
 */
export function withinLimitsSql(
  dialect: Dialect,
  limits: Record<string, RunLimits> | undefined,
  run: string,
  now: string,
): WithinLimits {
  const ctes: string[] = [];
  const conditions: string[] = [];
  for (const [i, [workflow, { concurrency, rateLimit }]] of Object.entries(limits ?? {}).entries()) {
    const holds: string[] = [];
    if (concurrency) {
      const places = `limit_places_${i}`;
      ctes.push(`${places} AS (${placesSql(dialect, workflow, concurrency.key, now)})`);
      const key = limitKeySql(dialect, run, concurrency.key);
      const full = (more: string) =>
        `(SELECT k FROM ${places} GROUP BY k HAVING count(*) ${more} ${concurrency.limit})`;
      holds.push(`(CASE WHEN ${run}.id IN (SELECT id FROM ${places}) THEN ${key} NOT IN ${full('>')}
        ELSE ${key} NOT IN ${full('>=')} END)`);
    }
    if (rateLimit) {
      const starts = `limit_starts_${i}`;
      ctes.push(
        `${starts} AS (${startsSql(dialect, workflow, rateLimit.key, `${now} - ${rateLimit.periodMs / 1000}`)})`,
      );
      holds.push(`(${run}.started_at IS NOT NULL OR ${limitKeySql(dialect, run, rateLimit.key)} NOT IN
        (SELECT k FROM ${starts} GROUP BY k HAVING count(*) >= ${rateLimit.limit}))`);
    }
    if (holds.length > 0) conditions.push(`(${run}.workflow <> ${literal(workflow)} OR (${holds.join(' AND ')}))`);
  }
  return { with: ctes.join(',\n  '), condition: conditions.join(' AND ') };
}

/**
 * Whether a stored publication may declare a limit that holds runs back (`w`: the workflows table's alias): the
 * PostgreSQL pick's test for taking the path under limits, in the statement that would otherwise take a run. A
 * superset of limitsHold, read from the text (a row something else wrote need not be JSON): readLimits decides.
 */
export const limitsMayHoldSql = (w: string): string =>
  `(${w}.limits_json LIKE '%"concurrency"%' OR ${w}.limits_json LIKE '%"rateLimit"%')`;

/**
 * A publication's limits_json read back through the domain's rules: what the pick writes into its text and what
 * a held run's reason reads. Null (none published) and a text that is not a valid declaration limit nothing.
 */
export function readLimits(text: string | null): RunLimits {
  if (text === null) return {};
  let stored: RunLimits;
  try {
    stored = JSON.parse(text) as RunLimits;
  } catch {
    return {};
  }
  if (stored === null || typeof stored !== 'object' || Array.isArray(stored)) return {};
  const { concurrency: c, rateLimit: r, priority } = stored;
  // The resolved form as a declaration again, known fields only (a newer Waybill's extra ones are left out).
  const declared: RunLimitsDeclaration = {
    ...(c ? { concurrency: { limit: c.limit, ...(c.key == null ? {} : { key: c.key }) } } : {}),
    ...(r ? { rateLimit: { limit: r.limit, period: r.periodMs, ...(r.key == null ? {} : { key: r.key }) } } : {}),
    ...(priority === undefined ? {} : { priority }),
  };
  const parsed = runLimitsSchema.safeParse(declared);
  return parsed.success ? resolveLimits(parsed.data) : {};
}

/**
 * The limits a pick of `workflows` holds runs back by (see the header): each workflow's publication, read by
 * readLimits, when the store has one (`published`: the workflows table's rows for them), else the worker's own
 * declaration (`own`). Only the workflows whose limits hold anything.
 */
export function pickLimits(
  workflows: string[],
  published: { name: string; limitsJson: string | null }[],
  own: Record<string, RunLimits> | undefined,
): Record<string, RunLimits> {
  const stored = new Map(published.map((row) => [row.name, row.limitsJson]));
  const limits: Record<string, RunLimits> = {};
  for (const name of workflows) {
    const chosen = stored.has(name) ? readLimits(stored.get(name)!) : own?.[name];
    if (chosen && limitsHold(chosen)) limits[name] = chosen;
  }
  return limits;
}
