/**
 * Child runs (lib/engine/children.ts): a child's end decides its parent's `child` wait, named for the child,
 * in the transaction that ends it. Both backends write that decision and the cancel's reach from here, and a
 * retry's: retrying a parent brings back the attached children its cancel had cancelled (runs.cancelled_with
 * names it; not those cancelled on their own), each with its event, and opens its waits for them again.
 */
import type { RunRow, RunStatus } from '../contract/rows';

/** Who decided a child wait, as the timeline and the parent read it. */
export const CHILD_DECIDER = 'child run';

/** The statuses a run ends in: a child in one of them has told its parent how it went. */
export const ENDED: readonly RunStatus[] = ['completed', 'failed', 'cancelled', 'rejected'];

/** What the parent's wait holds: how the child ended, its output (completed) or its error. */
export interface ChildOutcome {
  runId: string;
  status: 'completed' | 'failed' | 'cancelled' | 'rejected';
  output: unknown;
  error: string | null;
}

export function childDecisionJson(child: Pick<RunRow, 'id' | 'status' | 'outputJson' | 'error'>): string {
  const outcome: ChildOutcome = {
    runId: child.id,
    status: child.status as ChildOutcome['status'],
    output: child.outputJson === null ? null : (JSON.parse(child.outputJson) as unknown),
    error: child.error,
  };
  return JSON.stringify(outcome);
}

/** The timeline's line of the parent: "child crawl-7:child:a completed". */
export function childDetail(child: Pick<RunRow, 'id' | 'status'>): string {
  return `child ${child.id} ${child.status}`;
}

/**
 * The operator event of a child cancelled with its parent. Its words are for people: which cancel took a child is
 * its runs.cancelled_with, written in the same transaction.
 */
export function cascadeDetail(actor: string, parentId: string, from: RunStatus): string {
  return `cancel by ${actor} (with its parent ${parentId}): ${from} → cancelled`;
}

/**
 * The operator event of a child whose start came after its parent's cancel (the parent's worker was inside the
 * step that starts it): it is made cancelled, as the cancel would have made it had it been there.
 */
export function bornCancelledDetail(parentId: string): string {
  return `cancelled as it was started: its parent ${parentId} had been cancelled`;
}

/** The operator event of a child its parent's cancel had cancelled, retried with its parent. */
export function retriedWithParentDetail(actor: string, parentId: string): string {
  return `retry by ${actor} (with its parent ${parentId}): cancelled → queued`;
}

/** The parent's line when its retry opened its wait for such a child again. */
export function reopenedDetail(childId: string): string {
  return `child ${childId} retried with this run: its wait for it is open again`;
}
