/**
 * The row types the store hands out (lib/store/contract/rows.ts) are exactly what the two Drizzle schemas infer
 * (`$inferSelect`), and the two schemas infer the same rows and inserts, table by table: a column added to,
 * dropped from or retyped in one dialect, or in a row type, fails `npm run typecheck` (CI runs it before the
 * tests). At run time the assertions are no-ops.
 */
import { describe, expectTypeOf, it } from 'vitest';
import type {
  AuditEntry,
  ClaimRow,
  CommittedRow,
  ModelCallRow,
  ProgressRow,
  RunLogRow,
  RunRow,
  StepEvent,
  WorkerRow,
} from '../../lib/store/contract';
import type * as pg from '../../lib/store/schema/pg';
import type * as sqlite from '../../lib/store/schema/sqlite';

type Rows<T extends Record<string, { $inferSelect: unknown }>> = { [K in keyof T]: T[K]['$inferSelect'] };
type Inserts<T extends Record<string, { $inferInsert: unknown }>> = { [K in keyof T]: T[K]['$inferInsert'] };

const TABLES = [
  'progress',
  'committed',
  'claims',
  'runs',
  'stepEvents',
  'workers',
  'workflows',
  'audit',
  'metricsTally',
  'runLogs',
  'modelCalls',
  'modelCallChunks',
] as const;
type Tables = Pick<typeof sqlite, (typeof TABLES)[number]>;
type PgTables = Pick<typeof pg, (typeof TABLES)[number]>;

describe('the two Drizzle schemas', () => {
  it('declare the same tables under the same export names', () => {
    expectTypeOf<keyof Tables>().toEqualTypeOf<keyof PgTables>();
  });

  it('infer the same row for every table', () => {
    expectTypeOf<Rows<PgTables>['progress']>().toEqualTypeOf<Rows<Tables>['progress']>();
    expectTypeOf<Rows<PgTables>['committed']>().toEqualTypeOf<Rows<Tables>['committed']>();
    expectTypeOf<Rows<PgTables>['claims']>().toEqualTypeOf<Rows<Tables>['claims']>();
    expectTypeOf<Rows<PgTables>['runs']>().toEqualTypeOf<Rows<Tables>['runs']>();
    expectTypeOf<Rows<PgTables>['stepEvents']>().toEqualTypeOf<Rows<Tables>['stepEvents']>();
    expectTypeOf<Rows<PgTables>['workers']>().toEqualTypeOf<Rows<Tables>['workers']>();
    expectTypeOf<Rows<PgTables>['workflows']>().toEqualTypeOf<Rows<Tables>['workflows']>();
    expectTypeOf<Rows<PgTables>['audit']>().toEqualTypeOf<Rows<Tables>['audit']>();
    expectTypeOf<Rows<PgTables>['metricsTally']>().toEqualTypeOf<Rows<Tables>['metricsTally']>();
    expectTypeOf<Rows<PgTables>['runLogs']>().toEqualTypeOf<Rows<Tables>['runLogs']>();
    expectTypeOf<Rows<PgTables>['modelCalls']>().toEqualTypeOf<Rows<Tables>['modelCalls']>();
    expectTypeOf<Rows<PgTables>['modelCallChunks']>().toEqualTypeOf<Rows<Tables>['modelCallChunks']>();
  });

  it('take the same inserts (the same columns are optional or defaulted)', () => {
    expectTypeOf<Inserts<PgTables>['progress']>().toEqualTypeOf<Inserts<Tables>['progress']>();
    expectTypeOf<Inserts<PgTables>['committed']>().toEqualTypeOf<Inserts<Tables>['committed']>();
    expectTypeOf<Inserts<PgTables>['claims']>().toEqualTypeOf<Inserts<Tables>['claims']>();
    expectTypeOf<Inserts<PgTables>['runs']>().toEqualTypeOf<Inserts<Tables>['runs']>();
    expectTypeOf<Inserts<PgTables>['workers']>().toEqualTypeOf<Inserts<Tables>['workers']>();
    expectTypeOf<Inserts<PgTables>['workflows']>().toEqualTypeOf<Inserts<Tables>['workflows']>();
    expectTypeOf<Inserts<PgTables>['runLogs']>().toEqualTypeOf<Inserts<Tables>['runLogs']>();
    expectTypeOf<Inserts<PgTables>['modelCalls']>().toEqualTypeOf<Inserts<Tables>['modelCalls']>();
  });

  it('infer exactly the rows the store interface hands out', () => {
    expectTypeOf<ProgressRow>().toEqualTypeOf<Rows<Tables>['progress']>();
    expectTypeOf<CommittedRow>().toEqualTypeOf<Rows<Tables>['committed']>();
    expectTypeOf<Omit<ClaimRow, 'orphaned'>>().toEqualTypeOf<Rows<Tables>['claims']>();
    expectTypeOf<RunRow>().toEqualTypeOf<Rows<Tables>['runs']>();
    expectTypeOf<StepEvent>().toEqualTypeOf<Rows<Tables>['stepEvents']>();
    expectTypeOf<WorkerRow>().toEqualTypeOf<Omit<Rows<Tables>['workers'], 'workflowsJson'>>();
    expectTypeOf<AuditEntry>().toEqualTypeOf<Rows<Tables>['audit']>();
    expectTypeOf<RunLogRow>().toEqualTypeOf<Rows<Tables>['runLogs']>();
    expectTypeOf<ModelCallRow>().toEqualTypeOf<Rows<Tables>['modelCalls']>();
  });
});
