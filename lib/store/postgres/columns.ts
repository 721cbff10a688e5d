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

/** One event, timed by `now` (the database's clock, skewed). */
export function eventInsert(e: EventInput, now: SQL): SQL {
  return sql`INSERT INTO ${stepEvents} (${names(
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
  )})
  VALUES (${e.runId}, ${e.idemKey ?? null}, ${e.step ?? null}::int, ${e.outcome}, ${e.count ?? 1}::int,
    ${e.durationMs ?? null}::float8, ${e.workerId ?? null}, ${e.detail ?? null}, ${now}, ${e.attempt ?? null}::int)`;
}
