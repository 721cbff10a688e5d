/**
 * The runs page on PostgreSQL: runs newest first, outside clients' runs (rows with no runs row) among them,
 * keyset pagination on (updatedAt, id), with sqlite/run-list.ts's semantics. Ids order bytewise (COLLATE
 * "C"), as SQLite orders them; float8 times cross to JS and back exactly, so the cursor matches. Each filter
 * value sits where it is compared (Drizzle's `sql`), cast there so a null filter is typed.
 */
import { type SQL, sql } from 'drizzle-orm';
import { InvalidInputError } from '../../errors';
import type { RunStore, RunSummary } from '../contract';
import { claimExpiredSql, claimTimes } from '../shared/claim-expiry-sql';
import { containsPattern } from '../shared/columns';
import { OUTSIDE_STATUS_SQL, outsideMayMatch } from '../shared/outside-runs';
import { type CountedRunSummary, committedCountSql, notExecutedCountSql, withExecuted } from '../shared/run-counts';
import {
  filterBesides,
  keptCounts,
  meetingCounts,
  NARROW_RUNS,
  narrowestPart,
  type TagFilterPart,
  tagFilterParts,
} from '../shared/run-tag-filter';
import { nameOfText, type PgConnection } from './connection';
import { SERIAL_PLAN } from './serial-plan';

type Filter = Parameters<RunStore['listRuns']>[0];

const outsideStatus = (runId: string) => sql.raw(OUTSIDE_STATUS_SQL(runId));
/** The figures' counts (shared/run-counts.ts): `notExecuted` where the summary has `executed`. */
const committedCount = (id: string, progress: string | null = null) =>
  sql.raw(committedCountSql('postgres', id, progress));
const notExecutedCount = (id: string) => sql.raw(notExecutedCountSql('postgres', id));
/** SQLite's LIKE folds ASCII letters only; so does this, where ILIKE would follow the database's locale. */
const asciiLower = (x: SQL) => sql`translate(${x}, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')`;
/** An outside client's run's place in the list: the later of its progress's update and its claims'. */
const OUTSIDE_PLACE =
  'greatest(p.updated_at, coalesce((SELECT max(c.claimed_at) FROM claims c WHERE c.run_id = p.run_id), 0))';
/** A run's place in the list: the later of its row's and its progress's update (an outside client's: above). */
const PLACE = sql.raw(
  `CASE WHEN r.id IS NULL THEN ${OUTSIDE_PLACE} ELSE greatest(r.updated_at, coalesce(p.updated_at, 0)) END`,
);

function pageLimit(filter: Filter): number {
  const limit = filter.limit ?? 100;
  if (!Number.isSafeInteger(limit) || limit < 0) {
    throw new InvalidInputError(`limit must be a whole number of 0 or more, got ${limit}`);
  }
  return limit;
}

/**
 * The list's statement is named, so each connection parses it once and PostgreSQL keeps one plan for it once that
 * plan costs no more than those made for each call, only when no value of the filter can change its plan: the
 * unfiltered list and its later pages, the page the dashboard refreshes. A filtered list is planned for its values
 * each time (a kept plan would be one for an average status or tag). The limit is in the text, so at most
 * NAMED_TEXTS texts are named per store, and each of its connections keeps few prepared statements.
 */
const NAMED_TEXTS = 8;
/** Per store: each unfiltered shape (its limit, and whether it is a later page) and its statement's name. */
const namedBy = new WeakMap<PgConnection, Map<string, string>>();

function statementName(c: PgConnection, filter: Filter, statement: SQL): string | undefined {
  const valued = [filter.status, filter.waiting, filter.workflow, filter.owner, filter.parent, filter.search];
  if (valued.some((v) => v != null) || filter.tags?.length || filter.meta?.length) return undefined;
  const named = namedBy.get(c) ?? new Map<string, string>();
  namedBy.set(c, named);
  // Nothing else of an unfiltered list is written into its text, so its name is made once, from the first text.
  const shape = `${pageLimit(filter)}${filter.after ? ' after' : ''}`;
  const name = named.get(shape);
  if (name !== undefined || named.size >= NAMED_TEXTS) return name;
  const made = nameOfText('waybill_runs', c.text(statement).text);
  named.set(shape, made);
  return made;
}

/** The conditions given, joined by AND; TRUE when none is. */
function all(...conditions: (SQL | null | undefined | false)[]): SQL {
  const given = conditions.filter((c): c is SQL => !!c).map((c) => sql`(${c})`);
  return given.length ? sql.join(given, sql` AND `) : sql`TRUE`;
}

/**
 * The page's filters as conditions, each present only when it is given: the statement holds what the page asks
 * and nothing else, so PostgreSQL parses and plans a short statement, not every filter ruled out by a NULL.
 */
function conditions(filter: Filter, narrow: TagFilterPart | null = null) {
  // A run read from the narrow part's own index range carries that part: only the rest is checked.
  const carries = narrow ? filterBesides(filter, narrow) : { tags: filter.tags ?? [], meta: filter.meta ?? [] };
  const status = filter.waiting ? 'waiting' : (filter.status ?? null);
  const pattern = filter.search ? containsPattern(filter.search) : null;
  const after = filter.after ?? null;
  // Outside clients' runs have no owner, parent, wait, tag or metadata (shared/outside-runs.ts).
  const outside = outsideMayMatch(filter) && filter.owner == null && filter.parent == null && filter.waiting == null;
  return {
    status,
    outside,
    tagged: !!(filter.tags?.length || filter.meta?.length),
    // Written into the text: a LIMIT known when planning is planned for (a parameter's is taken as a tenth of the rows).
    limit: sql.raw(String(pageLimit(filter))),
    /** The runs row `r` has the filter's columns, open wait, tags and metadata (each tag and pair by its key). */
    run: all(
      status !== null && sql`r.status = ${status}::text`,
      filter.workflow != null && sql`r.workflow = ${filter.workflow}::text`,
      filter.owner != null && sql`r.owner = ${filter.owner}::text`,
      filter.parent != null && sql`r.parent_run_id = ${filter.parent}::text`,
      filter.waiting != null &&
        sql`EXISTS (SELECT 1 FROM waits ww WHERE ww.run_id = r.id AND ww.decided_at IS NULL AND ww.kind = ${filter.waiting}::text)`,
      ...carries.tags.map(
        (tag) => sql`EXISTS (SELECT 1 FROM run_tags rt WHERE rt.run_id = r.id AND rt.tag = ${tag}::text)`,
      ),
      ...carries.meta.map(
        (m) => sql`EXISTS (SELECT 1 FROM run_metadata rm
          WHERE rm.run_id = r.id AND rm.key = ${m.key}::text AND rm.value = ${m.value}::text)`,
      ),
    ),
    /** The outside run `id` has the filter's status (the only filter of those it may match that it can fail). */
    outsideStatus: (id: string) => status !== null && sql`${status}::text = ${outsideStatus(id)}`,
    search: (id: SQL) =>
      pattern !== null && sql`${asciiLower(id)} LIKE ${asciiLower(sql`${pattern}::text`)} ESCAPE '\\'`,
    /** After the cursor, by place then id. */
    after: (place: SQL, id: SQL) =>
      after !== null &&
      sql`${place} < ${after.updatedAt}::float8
        OR (${place} = ${after.updatedAt}::float8 AND ${id} COLLATE "C" > ${after.id}::text COLLATE "C")`,
  };
}

/** `narrow`: the tag filter's rarest part, to read the candidates from (shared/run-tag-filter.ts). */
function listSql(c: PgConnection, filter: Filter, narrow: TagFilterPart | null): SQL {
  const f = conditions(filter, narrow);
  const ttl = sql`${filter.claimTtlMs / 1000}::float8`;
  const orphaned = (run: string) => sql`(SELECT count(*)::int FROM claims c WHERE c.run_id = ${sql.raw(run)}
    AND ${claimExpiredSql(claimTimes('c.'), ttl, sql.raw('t.now'))})`;
  // The runs that can be on the page, so the summary is computed for a few hundred runs, not all of them:
  // the top of runs_updated and of progress_updated, each with the page's filters and cursor applied exactly,
  // plus outside clients' claimed runs. sqlite/run-list.ts CANDIDATES says why the runs rows' top (by_row)
  // bounds the rest: progress_updated is read down to its last time once it is full and not at all when it
  // is short; then the outside runs with progress are looked for apart, when the filter can match one. Each
  // bound is a subquery PostgreSQL runs once (an InitPlan), as an index bound or a one-time filter.
  const full = sql`(SELECT count(*) FROM by_row) = ${f.limit}`;
  const rowsTop = narrow
    ? sql``
    : sql`by_row AS MATERIALIZED (SELECT r.id, r.updated_at AS at FROM runs r LEFT JOIN progress p ON p.run_id = r.id
    WHERE ${all(f.run, f.search(sql.raw('r.id')), f.after(PLACE, sql.raw('r.id')))}
    ORDER BY r.updated_at DESC, r.id COLLATE "C" LIMIT ${f.limit}),`;
  // Outside clients' runs, read only when the filter can match one: those with progress while the runs rows'
  // top is short of a page, and those holding claims.
  const outsideTops = sql`
  UNION
  (SELECT p.run_id FROM progress p
    WHERE ${all(
      sql`NOT ${full}`,
      sql`NOT EXISTS (SELECT 1 FROM runs r WHERE r.id = p.run_id)`,
      f.outsideStatus('p.run_id'),
      f.search(sql.raw('p.run_id')),
      f.after(sql.raw(OUTSIDE_PLACE), sql.raw('p.run_id')),
    )}
    ORDER BY p.updated_at DESC, p.run_id COLLATE "C" LIMIT ${f.limit})
  UNION
  SELECT c.run_id FROM claims c WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.id = c.run_id)
    AND c.claimed_at >= (SELECT CASE WHEN count(*) < ${f.limit} THEN '-Infinity'::float8 ELSE min(at) END FROM by_row)`;
  // A narrow tag filter's candidates: the runs carrying its rarest part, from that part's index range, each by
  // its key, sorted by place (sqlite/run-list.ts's NARROW_CANDIDATES). Outside runs carry no tags. OFFSET 0 keeps
  // each lookup a lookup: joined, a thousand runs were estimated dearer by their keys than by a scan of all runs.
  const candidates = narrow
    ? sql`SELECT r.id FROM (${
        'tag' in narrow
          ? sql`SELECT run_id FROM run_tags WHERE tag = ${narrow.tag}`
          : sql`SELECT run_id FROM run_metadata WHERE key = ${narrow.key} AND value = ${narrow.value}`
      }) n
    CROSS JOIN LATERAL (SELECT r.id, r.updated_at FROM runs r WHERE r.id = n.run_id AND ${f.run} OFFSET 0) r
    LEFT JOIN LATERAL (SELECT p.run_id, p.updated_at FROM progress p WHERE p.run_id = r.id OFFSET 0) p ON TRUE
    WHERE ${all(f.search(sql.raw('r.id')), f.after(PLACE, sql.raw('r.id')))}
    ORDER BY ${PLACE} DESC, r.id COLLATE "C" LIMIT ${f.limit}`
    : sql`SELECT id FROM by_row
  UNION
  (SELECT p.run_id FROM progress p LEFT JOIN runs r ON r.id = p.run_id
    WHERE ${all(
      sql`p.updated_at >= (SELECT CASE WHEN count(*) < ${f.limit} THEN 'Infinity'::float8 ELSE min(at) END FROM by_row)`,
      f.outside
        ? sql`CASE WHEN r.id IS NULL THEN ${all(f.outsideStatus('p.run_id'))} ELSE ${f.run} END`
        : all(sql`r.id IS NOT NULL`, f.run),
      f.search(sql.raw('p.run_id')),
      f.after(PLACE, sql.raw('p.run_id')),
    )}
    ORDER BY p.updated_at DESC, p.run_id COLLATE "C" LIMIT ${f.limit})${f.outside ? outsideTops : sql``}`;
  // Only the outside runs' branch reads outside runs: without it, every candidate has a runs row.
  const outsideSummary = sql`
  UNION ALL
  SELECT x.run_id, 'external', ${outsideStatus('x.run_id')},
    coalesce(p.step, 0), NULL::int, ${notExecutedCount('x.run_id')}, coalesce(p.skipped, 0), coalesce(p.awaited, 0),
    ${committedCount('x.run_id', 'p')},
    ${orphaned('x.run_id')},
    NULL::text, NULL::text, NULL::float8,
    greatest(coalesce(p.updated_at, 0), coalesce((SELECT max(c.claimed_at) FROM claims c WHERE c.run_id = x.run_id), 0))
  FROM (SELECT id AS run_id FROM cand) x CROSS JOIN t
  LEFT JOIN progress p ON p.run_id = x.run_id
  WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.id = x.run_id)`;
  return sql`WITH t AS (SELECT ${c.now()} AS now, ${SERIAL_PLAN} AS plan), ${rowsTop}
cand AS (${candidates}),
summary AS (
  SELECT r.id, r.workflow, r.status, coalesce(p.step, 0) AS step, r.total_steps AS "totalSteps",
    ${notExecutedCount('r.id')} AS "notExecuted", coalesce(p.skipped, 0) AS skipped, coalesce(p.awaited, 0) AS awaited,
    ${committedCount('r.id', 'p')} AS committed,
    ${orphaned('r.id')} AS "orphanedClaims",
    r.owner, r.error, r.created_at AS "createdAt", greatest(r.updated_at, coalesce(p.updated_at, 0)) AS "updatedAt"
  FROM runs r CROSS JOIN t LEFT JOIN progress p ON p.run_id = r.id
  WHERE r.id IN (SELECT id FROM cand)${f.outside ? outsideSummary : sql``})
SELECT * FROM summary s
WHERE ${all(
    f.status !== null && sql`s.status = ${f.status}::text`,
    filter.workflow != null && sql`s.workflow = ${filter.workflow}::text`,
    f.search(sql.raw('s.id')),
    filter.owner != null && sql`s.owner = ${filter.owner}::text`,
    filter.parent != null && sql`s.id IN (SELECT pr.id FROM runs pr WHERE pr.parent_run_id = ${filter.parent}::text)`,
    // Only a runs row has a creation time: an outside client's run carries no tags.
    f.tagged && sql`s."createdAt" IS NOT NULL`,
    f.after(sql.raw('s."updatedAt"'), sql.raw('s.id')),
  )}
ORDER BY s."updatedAt" DESC, s.id COLLATE "C" LIMIT ${f.limit}`;
}

/**
 * Outside clients' runs that have nothing but committed rows (no progress, no claim): lone_runs, at each run's
 * latest commit, read newest first (sqlite/run-list.ts says more). The claims are looked up by each run's key.
 */
function loneSql(filter: Filter): SQL {
  const f = conditions(filter);
  return sql`SELECT * FROM (SELECT l.run_id AS id, 'external' AS workflow, 'idle' AS status,
    0 AS step, NULL::int AS "totalSteps", ${notExecutedCount('l.run_id')} AS "notExecuted", 0 AS skipped, 0 AS awaited,
    ${committedCount('l.run_id')} AS committed, 0 AS "orphanedClaims",
    NULL::text AS owner, NULL::text AS error, NULL::float8 AS "createdAt", l.at AS "updatedAt"
  FROM lone_runs l
  WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.id = l.run_id)
    AND NOT EXISTS (SELECT 1 FROM progress p WHERE p.run_id = l.run_id)
    AND (SELECT 1 FROM claims c WHERE c.run_id = l.run_id LIMIT 1) IS NULL) s
  WHERE ${all(
    sql`${SERIAL_PLAN} IS NOT NULL`,
    f.status !== null && sql`s.status = ${f.status}::text`,
    filter.workflow != null && sql`s.workflow = ${filter.workflow}::text`,
    f.search(sql.raw('s.id')),
    f.after(sql.raw('s."updatedAt"'), sql.raw('s.id')),
  )}
  ORDER BY s."updatedAt" DESC, s.id COLLATE "C" LIMIT ${f.limit}`;
}

export async function listRuns(c: PgConnection, filter: Filter): Promise<RunSummary[]> {
  if (filter.waiting && filter.status && filter.status !== 'waiting') return [];
  const limit = pageLimit(filter);
  const parts = tagFilterParts(filter);
  const kept = keptCounts(c);
  const counted = async (part: TagFilterPart, meeting: TagFilterPart[] | null) =>
    kept.get(part, meeting) ?? kept.keep(part, meeting, await countPart(c, part, filter, meeting !== null));
  const counts = parts && (await Promise.all(parts.map((part) => counted(part, null))));
  const meeting = parts && counts && meetingCounts(parts, counts) ? await counted(parts[0]!, parts) : null;
  // No run carries the whole filter: the page is empty, whatever else it asks (outside runs carry no tags).
  if (meeting === 0) return [];
  const narrow = parts && counts && narrowestPart(parts, counts, meeting);
  const statement = listSql(c, filter, narrow);
  const page = (await c.query<CountedRunSummary>(statement, statementName(c, filter, statement))).rows.map(
    withExecuted,
  );
  // Outside clients' runs with only committed rows, as sqlite/run-list.ts finds them (an `idle` external run).
  if (!outsideMayMatch(filter) || filter.status === 'running') return page;
  const lone = (await c.query<CountedRunSummary>(loneSql(filter))).rows.map(withExecuted);
  if (lone.length === 0) return page;
  const listed = new Set(page.map((r) => r.id));
  return [...page, ...lone.filter((r) => !listed.has(r.id))]
    .sort((a, b) => b.updatedAt - a.updatedAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .slice(0, limit);
}

/**
 * How many runs carry a part of a tag filter, or with `meeting` the part and the rest of the filter, counted up to
 * one past NARROW_RUNS (shared/run-tag-filter.ts). A run read from the part's index range carries the part, so
 * only the rest is checked, each tag and pair by its own key (filterBesides says why).
 */
async function countPart(c: PgConnection, part: TagFilterPart, filter: Filter, meeting: boolean): Promise<number> {
  const range =
    'tag' in part
      ? sql`SELECT n.run_id FROM run_tags n WHERE n.tag = ${part.tag}`
      : sql`SELECT n.run_id FROM run_metadata n WHERE n.key = ${part.key} AND n.value = ${part.value}`;
  const rest = filterBesides(filter, part);
  const carries = [
    ...rest.tags.map((tag) => sql`EXISTS (SELECT 1 FROM run_tags rt WHERE rt.run_id = n.run_id AND rt.tag = ${tag})`),
    ...rest.meta.map(
      (m) => sql`EXISTS (SELECT 1 FROM run_metadata rm
        WHERE rm.run_id = n.run_id AND rm.key = ${m.key} AND rm.value = ${m.value})`,
    ),
  ];
  const all = meeting && carries.length > 0 ? sql`AND ${sql.join(carries, sql` AND `)}` : sql``;
  const { rows } = await c.query<{ n: number }>(
    sql`SELECT (SELECT count(*)::int FROM (${range} ${all} LIMIT ${NARROW_RUNS + 1}::int) x) AS n
      WHERE ${SERIAL_PLAN} IS NOT NULL`,
  );
  return rows[0]!.n;
}
