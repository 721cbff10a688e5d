/**
 * Pieces of PostgreSQL statements the operation files share: bare column names for INSERT lists (the
 * schema's column references render qualified, which an INSERT's column list does not take), the committed
 * row's SELECT list, and the event insert.
 */
import { sql, type AnyColumn, type SQL } from 'drizzle-orm';
import { committedColumns } from '../columns';
import { committed, stepEvents } from '../schema.pg';
import type { StepEvent } from '../types';

/** `"col", "col", …` for an INSERT's column list. */
export function names(...columns: AnyColumn[]): SQL {
  return sql.join(
    columns.map((c) => sql.identifier(c.name)),
    sql`, `,
  );
}

/** The committed row as CommittedRow, from the table itself (no alias). */
export const committedSelect = sql.raw(committedColumns('postgres'));

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
