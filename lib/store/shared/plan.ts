/**
 * The form of a plan written once for both backends: a generator that yields a statement (`?` placeholders and
 * their values) and is handed its rows, so SQLite drives it synchronously inside BEGIN IMMEDIATE and PostgreSQL
 * asynchronously inside BEGIN … COMMIT (sqlite/plan.ts, postgres/plan.ts). The rewind plans (rewind.ts), the step
 * reads (step-reads.ts) and the metrics tally's fold (metrics-fold.ts) take this form.
 */
export type Statement = { sql: string; params: unknown[] };
/** A plan yields statements and is given each one's rows back; it returns its answer or throws a refusal. */
export type Plan<T> = Generator<Statement, T, Record<string, unknown>[]>;

export const q = (sql: string, ...params: unknown[]): Statement => ({ sql, params });
