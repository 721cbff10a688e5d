/**
 * Runs a shared plan (../shared/plan.ts has the form) on PostgreSQL, on the caller's transaction's client, as
 * for retention's metrics fold and rewind's plans.
 */
import type pg from 'pg';
import type { Plan } from '../shared/plan';

/** `?` placeholders as PostgreSQL's $1, $2… (the plans' statements hold no `?` inside a string literal). */
export const numbered = (text: string): string => {
  let n = 0;
  return text.replace(/\?/g, () => `$${++n}`);
};

export async function drive<T>(client: pg.PoolClient, plan: Plan<T>): Promise<T> {
  let step = plan.next();
  while (!step.done) {
    const { rows } = await client.query<Record<string, unknown>>(numbered(step.value.sql), step.value.params);
    step = plan.next(rows);
  }
  return step.value;
}
