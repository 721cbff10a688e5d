/**
 * limitUse and limitUses on PostgreSQL: shared/limit-use.ts's reads in one REPEATABLE READ, READ ONLY transaction,
 * so each statement sees the snapshot the first took, and now() is the transaction's in all of them. Each text is a
 * workflow's (or a rate key's starts'), its runs, hints and time its parameters: named by its text, it is planned
 * once a connection, where a select of a line's subqueries planned anew took longer than it ran. The rate line's
 * hint is a value that may be NULL, which fixedName otherwise keeps out of named texts: it only guards a strpos,
 * which is never an index condition, so no value of it changes the plan.
 */
import { sql } from 'drizzle-orm';
import type pg from 'pg';
import type { RunLimits } from '../../domain/run-limits';
import type { RunLimitUse, RunStore } from '../contract';
import {
  groupValues,
  type Judged,
  judged,
  type LimitSubject,
  type LimitUseRow,
  limitGroups,
  limitsIn,
  limitUseStatement,
  limitUsesOf,
  startsSelect,
  startsToRead,
  windowSince,
} from '../shared/limit-use';
import { FIXED, fixedName, type PgConnection } from './connection';
import { withRetry } from './retry';

export function postgresLimitUse(c: PgConnection): Pick<RunStore, 'limitUse' | 'limitUses'> {
  function read(ids: readonly string[], limitsOf: (workflow: string) => RunLimits | undefined) {
    return withRetry('limitUses', () =>
      c.inTransaction(async (client) => {
        await client.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY');
        const named = <R extends pg.QueryResultRow>(text: string, values: unknown[]) =>
          client.query<R>({ name: fixedName(text), text, values });
        const subjects = (
          await c.once<LimitSubject & { now: number }>(
            sql`SELECT id, workflow, input_json AS "inputJson", ${c.now()} AS now FROM runs
              WHERE id = ANY(${sql.param([...ids])}::text[])`,
            FIXED,
            client,
          )
        ).rows;
        const runs = new Map<string, Judged>();
        const now = Number(subjects[0]?.now);
        for (const group of limitGroups(subjects, limitsOf)) {
          const statement = limitUseStatement('postgres', group, {
            runs: null,
            from: `unnest($1::text[], $2::text[]) AS j (id, rate_hint) JOIN runs p ON p.id = j.id`,
            alias: 'p',
            now: '$3::float8',
            rateHint: 'j.rate_hint',
          });
          const values = groupValues(group);
          const { rows } = await named<LimitUseRow>(statement, [values.map((v) => v[0]), values.map((v) => v[1]), now]);
          for (const row of rows) runs.set(row.id, judged(group, row, now));
        }
        const reads = startsToRead(runs);
        const starts = new Map<string, number[]>();
        for (const [line, wanted] of reads) {
          const values = { runId: '$1', since: '$2::float8', offset: '$3::int', count: '$4::int' };
          const { rows } = await named<{ at: number }>(startsSelect('postgres', wanted.group, values), [
            wanted.runId,
            windowSince(wanted.group, now),
            wanted.offset,
            wanted.count,
          ]);
          starts.set(
            line,
            rows.map((row) => Number(row.at)),
          );
        }
        return limitUsesOf(runs, reads, starts);
      }),
    );
  }

  return {
    async limitUse(runId, limits) {
      return (await read([runId], () => limits)).get(runId) ?? null;
    },
    async limitUses(runIds, limits) {
      return runIds.length === 0 ? new Map<string, RunLimitUse>() : read(runIds, limitsIn(limits));
    },
  };
}
