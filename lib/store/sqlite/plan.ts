/**
 * Runs a shared plan (../shared/plan.ts has the form) on SQLite, synchronously: inside the caller's
 * BEGIN IMMEDIATE (retention's metrics fold, rewind's plans), or alone for a read.
 */
import type { Plan } from '../shared/plan';
import type { SqliteConnection } from './connection';

export function drive<T>(c: SqliteConnection, plan: Plan<T>): T {
  let step = plan.next();
  while (!step.done) {
    const statement = c.prepared(step.value.sql);
    if (statement.reader) {
      step = plan.next(statement.all(...step.value.params) as Record<string, unknown>[]);
    } else {
      statement.run(...step.value.params);
      step = plan.next([]);
    }
  }
  return step.value;
}
