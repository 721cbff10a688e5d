/**
 * The row types the store hands out are inferred from schema.sqlite.ts (lib/store/types-rows.ts); this checks
 * that schema.pg.ts infers the very same rows, table by table, so a column added to one dialect only fails
 * `npm run typecheck` (CI runs it before the tests); at run time the assertions are no-ops.
 */
import { describe, expectTypeOf, it } from 'vitest';
import type * as pg from '../../lib/store/schema.pg';
import type * as sqlite from '../../lib/store/schema.sqlite';
import type { ClaimRow, CommittedRow, ProgressRow, RunRow, StepEvent, WorkerRow } from '../../lib/store/types';

type Rows<T extends Record<string, { $inferSelect: unknown }>> = { [K in keyof T]: T[K]['$inferSelect'] };
type Inserts<T extends Record<string, { $inferInsert: unknown }>> = { [K in keyof T]: T[K]['$inferInsert'] };

const TABLES = ['progress', 'committed', 'claims', 'runs', 'stepEvents', 'workers', 'workflows', 'audit', 'metricsTally'] as const;
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
  });

  it('take the same inserts (the same columns are optional or defaulted)', () => {
    expectTypeOf<Inserts<PgTables>['progress']>().toEqualTypeOf<Inserts<Tables>['progress']>();
    expectTypeOf<Inserts<PgTables>['committed']>().toEqualTypeOf<Inserts<Tables>['committed']>();
    expectTypeOf<Inserts<PgTables>['claims']>().toEqualTypeOf<Inserts<Tables>['claims']>();
    expectTypeOf<Inserts<PgTables>['runs']>().toEqualTypeOf<Inserts<Tables>['runs']>();
    expectTypeOf<Inserts<PgTables>['workers']>().toEqualTypeOf<Inserts<Tables>['workers']>();
    expectTypeOf<Inserts<PgTables>['workflows']>().toEqualTypeOf<Inserts<Tables>['workflows']>();
  });

  it('are where the store interface gets its rows', () => {
    expectTypeOf<ProgressRow>().toEqualTypeOf<Rows<PgTables>['progress']>();
    expectTypeOf<CommittedRow>().toEqualTypeOf<Rows<PgTables>['committed']>();
    expectTypeOf<Omit<ClaimRow, 'orphaned'>>().toEqualTypeOf<Rows<PgTables>['claims']>();
    expectTypeOf<RunRow>().toEqualTypeOf<Rows<PgTables>['runs']>();
    expectTypeOf<StepEvent>().toEqualTypeOf<Rows<PgTables>['stepEvents']>();
    expectTypeOf<WorkerRow>().toEqualTypeOf<Omit<Rows<PgTables>['workers'], 'workflowsJson'>>();
  });
});
