/**
 * The rows the store hands out, derived from the Drizzle schema (schema.sqlite.ts) so a row's shape is written
 * once. test/contract/schema-types.test.ts checks that schema.pg.ts infers the very same rows, so either file
 * would do; the SQLite one is the reference. Times are epoch seconds, durations ms, JSON crosses as text.
 * Type-only: importing this loads no driver and no drizzle code.
 */
import type * as tables from './schema.sqlite';

type Row<T extends { $inferSelect: unknown }> = T['$inferSelect'];

export type Dialect = 'sqlite' | 'postgres';

export type Outcome = Row<typeof tables.stepEvents>['outcome'];
export type RunStatus = Row<typeof tables.runs>['status'];
export type RunAction = 'pause' | 'resume' | 'cancel' | 'retry';

/** A run's position and its counters. `saveMs`: how long the last progress write took, by its writer (ms). */
export type ProgressRow = Row<typeof tables.progress>;

export type CommittedRow = Row<typeof tables.committed>;

export type ClaimRow = Row<typeof tables.claims> & {
  /** The lease has passed by the store's clock: whether the side effect happened is unknown. */
  orphaned: boolean;
};

/** Append-only history of a run: each step's outcomes and the operators' actions. */
export type StepEvent = Row<typeof tables.stepEvents>;

export type RunRow = Row<typeof tables.runs>;

/**
 * A worker, less the names it serves (read through the published workflows). `machine`: the kernel and pid
 * namespace its pid lives in (machine.ts), null for a worker that recorded none; a peer judges this worker
 * dead by its pid only when its own machine is the same.
 */
export type WorkerRow = Omit<Row<typeof tables.workers>, 'workflowsJson'>;

/** The operators' log. `role` is `local` when no tokens are configured and the control plane answers loopback only. */
export type AuditEntry = Row<typeof tables.audit>;
export type AuditRole = AuditEntry['role'];
