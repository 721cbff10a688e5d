/**
 * Pieces of PostgreSQL statements the operation files share: bare column names for INSERT lists (the
 * schema's column references render qualified, which an INSERT's column list does not take), the SELECT
 * lists rows are read through, each built from the schema's table (lib/store/shared/columns.ts; sqlite/columns.ts
 * builds the same ones from its own), and the event insert.
 */
import { type AnyColumn, type SQL, sql } from 'drizzle-orm';
import type { StepEvent } from '../contract';
import { claims, committed, metricsTally, runLogs, runs, stepEvents, waits } from '../schema/pg';
import { selectAliases, selectList } from '../shared/columns';

/** bigint comes back from node-postgres as text; these ids stay far below 2^53. */
const asNumber = (column: string) => `${column}::float8`;

/** The committed row as CommittedRow, from the table itself (no alias). */
export const COMMITTED = selectList('postgres', committed);
export const CLAIM = selectList('postgres', claims);
/** A runs row as RunRow, from the table aliased `r` (ambiguous names otherwise, in UPDATE … FROM). */
export const RUN = selectList('postgres', runs, { of: 'r' });
/** RUN again, from a CTE whose RETURNING was RUN. */
export const RUN_ALIASES = selectAliases('postgres', runs);
export const EVENT = selectList('postgres', stepEvents, { as: { id: asNumber } });
/** A waits row as WaitRow, from the table aliased `w`. */
export const WAIT = selectList('postgres', waits, { of: 'w' });
/** A run_logs row; `seq` (bigint) is made a number by the caller. */
export const LOG = selectList('postgres', runLogs);
export const TALLY = selectList('postgres', metricsTally);
/** What an unstable-key look reads of a stepless row (UnstableCandidate). */
export const UNSTABLE = selectList('postgres', committed, { only: ['idemKey', 'fingerprint', 'committedAt'] });
/** What a library loop's start reads of its run row (loop-runs.ts). */
export const LOOP_RUN = selectList('postgres', runs, { only: ['workflow', 'status', 'owner', 'leaseExpiresAt'] });
/** A step's timing (StepTiming): the committed row's columns a chart reads. */
export const TIMING = selectList('postgres', committed, {
  only: ['step', 'idemKey', 'committedAt', 'durationMs', 'source'],
});

/** `"col", "col", …` for an INSERT's column list. */
export function names(...columns: AnyColumn[]): SQL {
  return sql.join(
    columns.map((c) => sql.identifier(c.name)),
    sql`, `,
  );
}

export const committedSelect = sql.raw(COMMITTED);

/**
 * One committed row by key. One builder for every caller: node-postgres refuses a statement name reused
 * with another text on a connection, and this one is prepared under 'waybill_committed'.
 */
export const committedByKey = (idemKey: string): SQL =>
  sql`SELECT ${committedSelect} FROM ${committed} WHERE ${committed.idemKey} = ${idemKey}`;

export type EventInput = Partial<StepEvent> & Pick<StepEvent, 'runId' | 'outcome'>;

const eventColumns = () =>
  names(
    stepEvents.runId,
    stepEvents.idemKey,
    stepEvents.step,
    stepEvents.outcome,
    stepEvents.count,
    stepEvents.durationMs,
    stepEvents.workerId,
    stepEvents.detail,
    stepEvents.at,
    stepEvents.attempt,
  );

const eventValues = (e: EventInput, now: SQL): SQL =>
  sql`${e.runId}, ${e.idemKey ?? null}, ${e.step ?? null}::int, ${e.outcome}, ${e.count ?? 1}::int,
    ${e.durationMs ?? null}::float8, ${e.workerId ?? null}, ${e.detail ?? null}, ${now}, ${e.attempt ?? null}::int`;

/** One event, timed by `now` (the database's clock, skewed). */
export function eventInsert(e: EventInput, now: SQL): SQL {
  return sql`INSERT INTO ${stepEvents} (${eventColumns()}) VALUES (${eventValues(e, now)})`;
}

/**
 * One event of a step's attempt, written once however often it is sent: a write retried after its answer was
 * lost finds the row its first send left (the same key, outcome, worker, attempt and duration, which is measured
 * to a fraction of a microsecond, so no other attempt's). For events a retried caller would otherwise repeat.
 */
export function eventInsertOnce(e: EventInput & Pick<StepEvent, 'idemKey'>, now: SQL): SQL {
  return sql`INSERT INTO ${stepEvents} (${eventColumns()}) SELECT ${eventValues(e, now)}
    WHERE NOT EXISTS (SELECT 1 FROM ${stepEvents} WHERE ${stepEvents.idemKey} = ${e.idemKey}
      AND ${stepEvents.outcome} = ${e.outcome} AND ${stepEvents.workerId} IS NOT DISTINCT FROM ${e.workerId ?? null}
      AND ${stepEvents.durationMs} IS NOT DISTINCT FROM ${e.durationMs ?? null}::float8
      AND ${stepEvents.attempt} IS NOT DISTINCT FROM ${e.attempt ?? null}::int)`;
}
