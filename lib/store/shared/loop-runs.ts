/**
 * What both backends decide alike about a library loop's run (sqlite/loop-runs.ts, postgres/loop-runs.ts).
 */
import { ConflictError, InvalidInputError } from '../../errors';
import type { LoopRunStart } from '../contract';

/** Throws when the run id is not this loop's to run: another workflow's, or a worker's under a live run lease. */
export function refuseBegin(
  r: LoopRunStart,
  row: { workflow: string; owner: string | null; leaseExpiresAt: number | null },
  now: number,
): void {
  if (row.workflow !== r.workflow) {
    throw new InvalidInputError(
      `run ${r.runId} is a ${row.workflow} run, and this loop declares workflow ${r.workflow}: give the loop a run id of its own`,
    );
  }
  if (row.leaseExpiresAt !== null && row.leaseExpiresAt > now && row.owner !== r.owner) {
    throw new ConflictError(`a live run ${r.runId} held by worker ${row.owner ?? '?'} (its run lease has not passed)`);
  }
}
