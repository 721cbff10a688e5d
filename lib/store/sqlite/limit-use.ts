/**
 * limitUse and limitUses on SQLite: shared/limit-use.ts's reads in one read transaction (deferred: it takes no
 * lock), at one `now` of the store's clock. A workflow's runs are one JSON array bound to its text, each run's hints
 * beside its id, read once (a materialized CTE) for every subquery that compares them.
 */
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
import { guard, type SqliteConnection } from './connection';

const SUBJECTS = `SELECT id, workflow, input_json AS inputJson FROM runs WHERE id IN (SELECT value FROM json_each(@ids))`;

export function sqliteLimitUse(c: SqliteConnection): Pick<RunStore, 'limitUse' | 'limitUses'> {
  const inOneSnapshot = c.db.transaction((fn: () => Map<string, RunLimitUse>) => fn());

  function read(
    ids: readonly string[],
    limitsOf: (workflow: string) => RunLimits | undefined,
  ): Map<string, RunLimitUse> {
    return guard(() =>
      inOneSnapshot(() => {
        const now = c.now();
        const subjects = c.prepared<[{ ids: string }], LimitSubject>(SUBJECTS).all({ ids: JSON.stringify(ids) });
        const runs = new Map<string, Judged>();
        for (const group of limitGroups(subjects, limitsOf)) {
          const statement = limitUseStatement('sqlite', group, {
            runs: `j AS MATERIALIZED (SELECT value ->> '$[0]' AS id, value ->> '$[1]' AS rate_hint FROM json_each(@runs))`,
            from: 'j CROSS JOIN runs WHERE runs.id = j.id',
            alias: 'runs',
            now: '@now',
            rateHint: 'j.rate_hint',
          });
          const rows = c
            .prepared<[{ runs: string; now: number }], LimitUseRow>(statement)
            .all({ runs: JSON.stringify(groupValues(group)), now });
          for (const row of rows) runs.set(row.id, judged(group, row, now));
        }
        const reads = startsToRead(runs);
        const starts = new Map<string, number[]>();
        for (const [line, wanted] of reads) {
          const values = { runId: '@id', since: '@since', offset: '@offset', count: '@count' };
          const at = c
            .prepared<[{ id: string; since: number; offset: number; count: number }], { at: number }>(
              startsSelect('sqlite', wanted.group, values),
            )
            .all({
              id: wanted.runId,
              since: windowSince(wanted.group, now),
              offset: wanted.offset,
              count: wanted.count,
            })
            .map((row) => row.at);
          starts.set(line, at);
        }
        return limitUsesOf(runs, reads, starts);
      }),
    );
  }

  return {
    async limitUse(runId, limits) {
      return read([runId], () => limits).get(runId) ?? null;
    },
    async limitUses(runIds, limits) {
      return runIds.length === 0 ? new Map<string, RunLimitUse>() : read(runIds, limitsIn(limits));
    },
  };
}
