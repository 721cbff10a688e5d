/**
 * Keeps PostgreSQL from planning a read in parallel. `set_config` is PARALLEL UNSAFE, and the planner judges
 * that of the statement as written, so a statement that calls it anywhere is planned for one process; the
 * setting is transaction-local and read by nothing.
 *
 * For the pages' reads: they are many, short and concurrent, and a parallel plan launches its workers when
 * the Gather is first run, even under a one-time filter that turns out false (the runs list's branch for
 * outside runs when the page is full), so the launch is paid for a branch that reads nothing. The workers
 * also come from the database's shared pool, which the user's own application draws on.
 * bench/RESULTS.md, "A quiet machine", has what it cost.
 */
import { sql } from 'drizzle-orm';

/**
 * An expression to select or to test (`IS NOT NULL`, always true) anywhere in a statement to plan it serially.
 * A subquery with nothing of the rows in it, so it is run once (an InitPlan), wherever it stands.
 */
export const SERIAL_PLAN = sql.raw(`(SELECT set_config('waybill.plan', 'serial', true))`);
