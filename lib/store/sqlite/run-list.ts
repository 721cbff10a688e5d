/**
 * The runs page on SQLite: runs newest first, outside clients' runs (rows with no runs row) among them, with
 * keyset pagination on (updatedAt, id). Hand-written: a run's place is the later of two times, and the
 * statements below read the top of two indexes instead of sorting every run (CANDIDATES says why).
 */

import type { RunStore, RunSummary } from '../contract';
import { claimExpiresAtText } from '../shared/claim-expiry-sql';
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
import type { SqliteConnection } from './connection';

/** An outside client's run's place in the list: the later of its progress's update and its claims'. */
const OUTSIDE_PLACE = (id: string) =>
  `max(p.updated_at, coalesce((SELECT max(c.claimed_at) FROM claims c WHERE c.run_id = ${id}), 0))`;
/** A run's place in the list: the later of its row's and its progress's update (an outside client's: above). */
const PLACE = `CASE WHEN r.id IS NULL THEN ${OUTSIDE_PLACE('p.run_id')} ELSE max(r.updated_at, coalesce(p.updated_at, 0)) END`;
const AFTER = (id: string, place = PLACE) =>
  `(@afterAt IS NULL OR ${place} < @afterAt OR (${place} = @afterAt AND ${id} > @afterId))`;
// `waiting`: parked on an open wait of that kind (listRunsIn then also asks for status `waiting`).
// `tags`, `meta`: JSON arrays of the tags and [key, value] pairs every run listed carries, each found by its key.
const TAGS_MATCH = (id: string) => `(@tags IS NULL OR NOT EXISTS (SELECT 1 FROM json_each(@tags) t
    WHERE NOT EXISTS (SELECT 1 FROM run_tags rt WHERE rt.run_id = ${id} AND rt.tag = t.value)))
  AND (@meta IS NULL OR NOT EXISTS (SELECT 1 FROM json_each(@meta) m
    WHERE NOT EXISTS (SELECT 1 FROM run_metadata rm WHERE rm.run_id = ${id} AND rm.key = m.value ->> 0 AND rm.value = m.value ->> 1)))`;
const RUN_FILTER = `(@status IS NULL OR r.status = @status) AND (@workflow IS NULL OR r.workflow = @workflow)
  AND (@owner IS NULL OR r.owner = @owner) AND (@parent IS NULL OR r.parent_run_id = @parent) AND (@waiting IS NULL OR EXISTS (SELECT 1 FROM waits ww
    WHERE ww.run_id = r.id AND ww.decided_at IS NULL AND ww.kind = @waiting))
  AND ${TAGS_MATCH('r.id')}`;

/**
 * The runs that can be on the page, so the summary is computed for a few hundred runs, not all of them.
 * A run's place is the later of two times, and the first `limit` runs by that are all among the first
 * `limit` by either time alone (a run passed over in both would have `limit` runs ahead of it), so it is
 * enough to read the top of two indexes, runs_updated and progress_updated, each with the page's filters
 * and cursor applied exactly; plus outside clients' claimed runs, as few as the claims in flight.
 *
 * The runs rows' top (BY_ROW, runs_status_updated's when a status is asked) is read first, so the other
 * branches know where to stop. Once it holds `limit` runs, its last time is the page's floor: a run whose row
 * and progress are both older has `limit` runs ahead of it, and an outside run whose progress and claims are,
 * too. So progress_updated is read down to @floor, and the claims from @claimFloor (both the floor), these only
 * when the filter can match an outside run (@outside: a tag, a wait or a workflow of ours cannot). When the
 * runs rows' top is short, it holds every runs row the filter matches: progress_updated is not read (@floor is
 * past any time), the outside runs with progress are found by an ordered EXCEPT of the two primary keys (one
 * merge, no lookup per row) when the filter can match one (@short), and every outside claim is read. A filter
 * few or no runs match (`status=rejected`, `workflow=nope`) so costs the runs rows' walk alone, not a runs
 * lookup for each of progress's rows as well; and with a status or a workflow that walk is the top of that
 * status's or workflow's own index (runs_status_updated, runs_workflow_updated), not all of runs_updated.
 */
const BY_ROW = (term: string) => `SELECT r.id, r.updated_at AS at FROM runs r LEFT JOIN progress p ON p.run_id = r.id
  WHERE ${RUN_FILTER} ${term}
    AND (@search IS NULL OR r.id LIKE @search ESCAPE '\\') AND ${AFTER('r.id')}
  ORDER BY r.updated_at DESC, r.id LIMIT @limit`;
const BY_ROW_SQL = BY_ROW('');
// The status (or else the workflow) once more as a term of its own: the planner then reads runs_status_updated
// (runs_workflow_updated), not all of runs_updated.
const BY_ROW_STATUS_SQL = BY_ROW('AND r.status = @status');
const BY_ROW_WORKFLOW_SQL = BY_ROW('AND r.workflow = @workflow');

const CANDIDATES = `cand(id) AS MATERIALIZED (
  SELECT value FROM json_each(@byRow)
  UNION
  SELECT id FROM (SELECT p.run_id AS id FROM progress p LEFT JOIN runs r ON r.id = p.run_id
    WHERE p.updated_at >= @floor AND CASE WHEN r.id IS NULL
        THEN (@status IS NULL OR @status = ${OUTSIDE_STATUS_SQL('p.run_id')})
          AND (@workflow IS NULL OR @workflow = 'external') AND @owner IS NULL AND @parent IS NULL AND @waiting IS NULL
          AND @tags IS NULL AND @meta IS NULL
        ELSE ${RUN_FILTER} END
      AND (@search IS NULL OR p.run_id LIKE @search ESCAPE '\\') AND ${AFTER('p.run_id')}
    ORDER BY p.updated_at DESC, p.run_id LIMIT @limit)
  UNION
  SELECT id FROM (SELECT o.run_id AS id FROM (SELECT run_id FROM progress WHERE @short
      EXCEPT SELECT id FROM runs WHERE @short ORDER BY 1) o JOIN progress p ON p.run_id = o.run_id
    WHERE (@status IS NULL OR @status = ${OUTSIDE_STATUS_SQL('o.run_id')})
      AND (@search IS NULL OR o.run_id LIKE @search ESCAPE '\\') AND ${AFTER('o.run_id', OUTSIDE_PLACE('o.run_id'))}
    ORDER BY p.updated_at DESC, o.run_id LIMIT @limit)
  UNION
  SELECT c.run_id FROM claims c WHERE @outside AND c.claimed_at >= @claimFloor
    AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.id = c.run_id))`;

/**
 * A narrow tag or metadata filter's candidates (shared/run-tag-filter.ts): the runs carrying its rarest part,
 * from that part's index range (at most NARROW_RUNS), each run by its key (CROSS JOIN keeps that order), sorted
 * by place. No outside client's run: it carries no tag or metadata.
 */
const NARROW_CANDIDATES = `cand(id) AS MATERIALIZED (
  SELECT id FROM (SELECT r.id FROM (SELECT run_id FROM run_tags WHERE tag = @narrowTag
      UNION ALL SELECT run_id FROM run_metadata WHERE key = @narrowKey AND value = @narrowValue) n
    CROSS JOIN runs r ON r.id = n.run_id LEFT JOIN progress p ON p.run_id = r.id
    WHERE ${RUN_FILTER} AND (@search IS NULL OR r.id LIKE @search ESCAPE '\\') AND ${AFTER('r.id')}
    ORDER BY ${PLACE} DESC, r.id LIMIT @limit))`;

// `meeting`: only the part's runs that carry the whole filter (shared/run-tag-filter.ts, the second count).
const COUNT_TAG = (meeting: boolean) => `SELECT count(*) AS n FROM (SELECT 1 FROM run_tags n WHERE n.tag = @tag
  ${meeting ? `AND ${TAGS_MATCH('n.run_id')}` : ''} LIMIT @cap)`;
const COUNT_META = (meeting: boolean) => `SELECT count(*) AS n FROM (SELECT 1 FROM run_metadata n
  WHERE n.key = @key AND n.value = @value ${meeting ? `AND ${TAGS_MATCH('n.run_id')}` : ''} LIMIT @cap)`;
const COUNTS = {
  alone: { tag: COUNT_TAG(false), meta: COUNT_META(false) },
  meeting: { tag: COUNT_TAG(true), meta: COUNT_META(true) },
};

/** The figures' counts (shared/run-counts.ts): `notExecuted` where the summary has `executed`. */
const COMMITTED = (id: string, progress: string | null = null) => committedCountSql('sqlite', id, progress);
const NOT_EXECUTED = (id: string) => notExecutedCountSql('sqlite', id);

/** Outside clients' runs have progress or claims but no runs row; they are listed all the same. */
const SUMMARY_SQL = `
  SELECT r.id, r.workflow, r.status, coalesce(p.step, 0) AS step, r.total_steps AS totalSteps,
    ${NOT_EXECUTED('r.id')} AS notExecuted, coalesce(p.skipped, 0) AS skipped, coalesce(p.awaited, 0) AS awaited,
    ${COMMITTED('r.id', 'p')} AS committed,
    (SELECT count(*) FROM claims c WHERE c.run_id = r.id
       AND ${claimExpiresAtText('@ttl', 'c.')} <= @now) AS orphanedClaims,
    r.owner, r.error, r.created_at AS createdAt, max(r.updated_at, coalesce(p.updated_at, 0)) AS updatedAt
  FROM runs r LEFT JOIN progress p ON p.run_id = r.id
  WHERE r.id IN (SELECT id FROM cand)
  UNION ALL
  SELECT x.run_id, 'external', ${OUTSIDE_STATUS_SQL('x.run_id')},
    coalesce(p.step, 0), NULL, ${NOT_EXECUTED('x.run_id')}, coalesce(p.skipped, 0), coalesce(p.awaited, 0),
    ${COMMITTED('x.run_id', 'p')},
    (SELECT count(*) FROM claims c WHERE c.run_id = x.run_id
       AND ${claimExpiresAtText('@ttl', 'c.')} <= @now),
    NULL, NULL, NULL,
    max(coalesce(p.updated_at, 0), coalesce((SELECT max(claimed_at) FROM claims c WHERE c.run_id = x.run_id), 0))
  FROM (SELECT id AS run_id FROM cand) x
  LEFT JOIN progress p ON p.run_id = x.run_id
  WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.id = x.run_id)`;

// An outside client's claimed run is a candidate whatever the filter; its status is never `waiting`.
const PAGE_FILTER = `(@status IS NULL OR status = @status) AND (@workflow IS NULL OR workflow = @workflow)
  AND (@waiting IS NULL OR status = 'waiting')
  AND (@search IS NULL OR id LIKE @search ESCAPE '\\') AND (@owner IS NULL OR owner = @owner)
  AND (@parent IS NULL OR id IN (SELECT pr.id FROM runs pr WHERE pr.parent_run_id = @parent))
  -- Only a runs row has a creation time: an outside client's run carries no tags.
  AND ((@tags IS NULL AND @meta IS NULL) OR createdAt IS NOT NULL)
  AND (@afterAt IS NULL OR updatedAt < @afterAt OR (updatedAt = @afterAt AND id > @afterId))`;

// The candidates are MATERIALIZED: SUMMARY_SQL reads them twice (runs rows, then outside runs), and SQLite
// otherwise computes a CTE again at each use, a rare tag's 1,001 runs looked up and sorted twice a page.
const PAGE = (candidates: string) =>
  `WITH ${candidates} SELECT * FROM (${SUMMARY_SQL}) WHERE ${PAGE_FILTER} ORDER BY updatedAt DESC, id LIMIT @limit`;
const PAGE_SQL = PAGE(CANDIDATES);
const NARROW_PAGE_SQL = PAGE(NARROW_CANDIDATES);

/**
 * Outside clients' runs that have nothing but committed rows (no progress, no claim): lone_runs holds each run with
 * committed rows and neither a runs row nor a progress row, at its latest commit (migration 0031's triggers keep it
 * for every writer), read newest first from lone_runs_at. The runs, progress and claims rows are looked at again: a
 * claimed run is among CANDIDATES' outside claims instead.
 */
const LONE_SQL = `SELECT * FROM (SELECT l.run_id AS id, 'external' AS workflow, ${OUTSIDE_STATUS_SQL('l.run_id')} AS status,
    0 AS step, NULL AS totalSteps, ${NOT_EXECUTED('l.run_id')} AS notExecuted, 0 AS skipped, 0 AS awaited,
    ${COMMITTED('l.run_id')} AS committed, 0 AS orphanedClaims, NULL AS owner,
    NULL AS error, NULL AS createdAt, l.at AS updatedAt
  FROM lone_runs l
  WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.id = l.run_id)
    AND NOT EXISTS (SELECT 1 FROM progress p WHERE p.run_id = l.run_id)
    AND NOT EXISTS (SELECT 1 FROM claims c WHERE c.run_id = l.run_id))
  WHERE ${PAGE_FILTER} ORDER BY updatedAt DESC, id LIMIT @limit`;

/** One read transaction: the page and the commits it is compared with are one snapshot. */
export function listRunsIn(c: SqliteConnection, filter: Parameters<RunStore['listRuns']>[0]): RunSummary[] {
  if (filter.waiting && filter.status && filter.status !== 'waiting') return [];
  const params = {
    ttl: filter.claimTtlMs / 1000,
    now: c.now(),
    // A wait's kind is asked of waiting runs only: runs_status_updated finds them, however many others there are.
    status: filter.waiting ? 'waiting' : (filter.status ?? null),
    waiting: filter.waiting ?? null,
    workflow: filter.workflow ?? null,
    search: filter.search ? containsPattern(filter.search) : null,
    owner: filter.owner ?? null,
    parent: filter.parent ?? null,
    tags: filter.tags?.length ? JSON.stringify(filter.tags) : null,
    meta: filter.meta?.length ? JSON.stringify(filter.meta.map((m) => [m.key, m.value])) : null,
    limit: filter.limit ?? 100,
    afterAt: filter.after?.updatedAt ?? null,
    afterId: filter.after?.id ?? null,
  };
  const parts = tagFilterParts(filter);
  const outside = outsideMayMatch(filter);
  // A run read from a part's index range carries that part: only the rest of the filter is checked (@tags, @meta).
  const besides = (part: TagFilterPart) => {
    const rest = filterBesides(filter, part);
    return {
      tags: rest.tags.length ? JSON.stringify(rest.tags) : null,
      meta: rest.meta.length ? JSON.stringify(rest.meta.map((m) => [m.key, m.value])) : null,
    };
  };
  return c.db
    .transaction((): CountedRunSummary[] => {
      const kept = keptCounts(c);
      const counted = (part: TagFilterPart, meeting: TagFilterPart[] | null) =>
        kept.get(part, meeting) ??
        kept.keep(
          part,
          meeting,
          meeting ? countPart(c, part, 'meeting', besides(part)) : countPart(c, part, 'alone', params),
        );
      const counts = parts?.map((part) => counted(part, null));
      const meeting = parts && counts && meetingCounts(parts, counts) ? counted(parts[0]!, parts) : null;
      // No run carries the whole filter: the page is empty, whatever else it asks (outside runs carry no tags).
      if (meeting === 0) return [];
      const narrow = parts && counts && narrowestPart(parts, counts, meeting);
      const page = narrow
        ? c.prepared<unknown[], CountedRunSummary>(NARROW_PAGE_SQL).all({
            ...params,
            ...besides(narrow),
            narrowTag: 'tag' in narrow ? narrow.tag : null,
            narrowKey: 'key' in narrow ? narrow.key : null,
            narrowValue: 'key' in narrow ? narrow.value : null,
          })
        : pageFromRows(c, params, outside);
      // An outside run with nothing but committed rows is idle: it holds no claim.
      const lonely = outside && params.status !== 'running';
      if (!lonely) return page;
      const lone = c.prepared<unknown[], CountedRunSummary>(LONE_SQL).all(params);
      if (lone.length === 0) return page;
      return [...page, ...lone]
        .sort((a, b) => b.updatedAt - a.updatedAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
        .slice(0, params.limit);
    })()
    .map(withExecuted);
}

/** The page from CANDIDATES: the runs rows' top first, then the rest with its floor (CANDIDATES says why). */
function pageFromRows(
  c: SqliteConnection,
  params: { status: string | null; workflow: string | null; limit: number },
  outside: boolean,
): CountedRunSummary[] {
  const byRowSql =
    params.status !== null ? BY_ROW_STATUS_SQL : params.workflow !== null ? BY_ROW_WORKFLOW_SQL : BY_ROW_SQL;
  const byRow = c.prepared<unknown[], { id: string; at: number }>(byRowSql).all(params);
  const full = byRow.length === params.limit;
  const floor = full ? (byRow.at(-1)?.at ?? null) : null;
  return c.prepared<unknown[], CountedRunSummary>(PAGE_SQL).all({
    ...params,
    byRow: JSON.stringify(byRow.map((run) => run.id)),
    floor: floor ?? Number.MAX_VALUE,
    claimFloor: floor ?? -Number.MAX_VALUE,
    outside: outside ? 1 : 0,
    short: !full && outside ? 1 : 0,
  });
}

/**
 * How many runs carry a part of a tag filter (`alone`), or the part and the rest of the filter (`meeting`), counted
 * up to one past NARROW_RUNS (shared/run-tag-filter.ts).
 */
function countPart(
  c: SqliteConnection,
  part: TagFilterPart,
  how: keyof typeof COUNTS,
  params: { tags: string | null; meta: string | null },
): number {
  const cap = NARROW_RUNS + 1;
  const filter = how === 'meeting' ? { tags: params.tags, meta: params.meta } : {};
  const row =
    'tag' in part
      ? c.prepared<unknown[], { n: number }>(COUNTS[how].tag).get({ tag: part.tag, cap, ...filter })
      : c
          .prepared<unknown[], { n: number }>(COUNTS[how].meta)
          .get({ key: part.key, value: part.value, cap, ...filter });
  return row!.n;
}
