/**
 * The SELECT lists SQLite's hand-written statements read rows through, each built from the schema's table
 * (lib/store/shared/columns.ts), never written out: postgres/columns.ts builds the same ones from its own schema.
 */

import { claims, committed, metricsTally, progress, runs, stepEvents } from '../schema/sqlite';
import { selectList } from '../shared/columns';

export const COMMITTED = selectList('sqlite', committed);
export const CLAIM = selectList('sqlite', claims);
export const PROGRESS = selectList('sqlite', progress);
export const EVENT = selectList('sqlite', stepEvents);
export const TALLY = selectList('sqlite', metricsTally);
/** What an unstable-key look reads of a stepless row (UnstableCandidate). */
export const UNSTABLE = selectList('sqlite', committed, { only: ['idemKey', 'fingerprint', 'committedAt'] });
/** What a library loop's start reads of its run row (loop-runs.ts). */
export const LOOP_RUN = selectList('sqlite', runs, { only: ['workflow', 'status', 'owner', 'leaseExpiresAt'] });
/** A step's timing (StepTiming): the committed row's columns a chart reads. */
export const TIMING = selectList('sqlite', committed, {
  only: ['step', 'idemKey', 'committedAt', 'durationMs', 'source'],
});
