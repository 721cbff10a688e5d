/**
 * A run's committed rows on SQLite, in two partial indexes (migration 0030): committed_fresh, on (run, step),
 * holds the rows the step protocol committed since the last settle; committed_run_step, on (run, step, key),
 * every other row.
 *
 * Why two: an index that leads with the run keeps each run's rows in leaves of their own, so a group commit of
 * 64 runs wrote a leaf of committed_run_step per run, 1.4 of a step's 3.0 WAL pages. committed_fresh holds only
 * the last SETTLE_EVERY or so rows of all runs, short entries in a few pages a batch shares; a settle then moves
 * each run's rows into committed_run_step together, a leaf per run per settle instead of per step (settle.ts,
 * bench/RESULTS.md).
 *
 * What it asks of a read: `run_id = ?` alone implies neither index's WHERE, so SQLite would scan the table. A
 * read by run names both halves: `committedRun` where order does not matter (SQLite reads both indexes, a
 * MULTI-INDEX OR), `runRowsInOrder` where it does (a UNION ALL that SQLite merges, each arm read in (step) order
 * and only the keys of one step sorted, so a page of a 100,000-step run sorts nothing more).
 * test/contract/committed-plans.test.ts fails on any statement that scans `committed`.
 */
/** Each index's WHERE: committed_fresh's, then committed_run_step's (`of`: the table's alias and a dot). */
export const FRESH = (of = '') => `${of}fresh IS NOT NULL`;
const SETTLED = (of = '') => `${of}fresh IS NULL`;

/** One SELECT for each index, `arm` given that index's WHERE, as a UNION ALL. */
const eachIndex = (arm: (half: string) => string): string => `${arm(FRESH())} UNION ALL ${arm(SETTLED())}`;

/** `run_id <test>` (`= @runId`, `IN (…)`) on committed, in a form each partial index can answer. */
export const committedRun = (test: string, of = ''): string =>
  `((${of}run_id ${test} AND ${FRESH(of)}) OR (${of}run_id ${test} AND ${SETTLED(of)}))`;

/** Every run id with committed rows, read from the two indexes (a table scan otherwise). */
export const committedRunIds = eachIndex((half) => `SELECT run_id FROM committed WHERE ${half}`);

/**
 * `SELECT columns FROM committed WHERE run_id = id AND where` as two arms, one an index range each: as a FROM
 * source, a read of a whole run walks each index in order (where the OR form collects and sorts the rowids of
 * a 100,000-step run first, a third slower); with an aggregate as `columns`, one figure an arm.
 */
export function runRows(q: { columns: string; id: string; where?: string }): string {
  return eachIndex(
    (half) =>
      `SELECT ${q.columns} FROM committed WHERE run_id = ${q.id} AND ${half}${q.where ? ` AND (${q.where})` : ''}`,
  );
}

/**
 * runRows `ORDER BY order LIMIT limit`, which SQLite merges: each arm reads its index in (step) order, so `order`
 * must be (step, key) or its reverse, in output column names (the arms', so `step`, `idem_key` or their aliases).
 */
export function runRowsInOrder(q: {
  columns: string;
  id: string;
  where?: string;
  order: string;
  limit?: string;
}): string {
  return `${runRows(q)} ORDER BY ${q.order}${q.limit ? ` LIMIT ${q.limit}` : ''}`;
}
