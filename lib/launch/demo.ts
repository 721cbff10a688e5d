/**
 * `npm start`'s demo: a run long enough to watch (a few minutes, a failure or two retried), queued into an
 * empty store, and queued again each time it completes, for a newcomer who looked away and came back, until
 * the user starts a run of their own (or cancels the demo, or has watched it REPLAYS_MAX times). A store with
 * anyone's run in it gets no demo at all.
 */
import { startRun } from '../engine/runs';
import type { WorkflowRegistry } from '../engine/workflow';
import type { RunStore, RunSummary, Store } from '../store/contract';

export const DEMO_PREFIX = 'demo-agent-batch';
/** 240 simulated model calls of 750 ms: about three and a half minutes with the retried failures. */
export const DEMO_INPUT = { count: 240, latencyMs: 750, failureRate: 0.05 };
/** About fourteen hours of replays; past that, a forgotten terminal would fill the store with demos. */
export const REPLAYS_MAX = 240;
/** How many of the latest runs are looked at: a user's own run is among the newest when there is one. */
const LOOK_AT = 20;

/**
 * Queued once beside the first demo: a review-and-send run, so a newcomer finds an approval waiting on the first
 * page (Approve or Reject on its run page). Never replayed: one decision is the whole demo.
 */
export const DEMO_REVIEW_ID = 'demo-review-and-send';

export const isDemoRun = (id: string) =>
  id === DEMO_PREFIX || id.startsWith(`${DEMO_PREFIX}-`) || id === DEMO_REVIEW_ID;

/** The demo run's id after `latest` (demo-agent-batch, -2, -3, …). */
export function nextDemoId(latest: string | null): string {
  if (latest === null) return DEMO_PREFIX;
  const n = latest === DEMO_PREFIX ? 1 : Number(latest.slice(DEMO_PREFIX.length + 1));
  return `${DEMO_PREFIX}-${Number.isInteger(n) ? n + 1 : 2}`;
}

export type DemoDecision =
  | { queue: string }
  /** `done`: stop watching for good (the user has runs of their own, cancelled the demo, or watched enough). */
  | { wait: true; done: boolean; why: string };

/**
 * What to do given the store's newest runs: queue a demo into an empty store, queue the next one once the
 * latest demo completed, wait while it runs, and stop once anything says the user has moved on.
 */
export function decideDemo(runs: Pick<RunSummary, 'id' | 'status' | 'createdAt' | 'updatedAt'>[]): DemoDecision {
  if (runs.some((run) => !isDemoRun(run.id))) return { wait: true, done: true, why: 'the store has runs of its own' };
  if (runs.length === 0) return { queue: DEMO_PREFIX };
  // The review demo is never replayed: only the agent-batch runs say what comes next.
  const batches = runs.filter((run) => run.id !== DEMO_REVIEW_ID);
  if (batches.length === 0) return { wait: true, done: true, why: 'only the review demo is left' };
  const latest = [...batches].sort((a, b) => demoNumber(b.id) - demoNumber(a.id))[0]!;
  if (demoNumber(latest.id) > REPLAYS_MAX) return { wait: true, done: true, why: `the demo ran ${REPLAYS_MAX} times` };
  if (latest.status === 'cancelled') return { wait: true, done: true, why: 'the demo run was cancelled' };
  if (latest.status === 'completed') return { queue: nextDemoId(latest.id) };
  return { wait: true, done: false, why: `${latest.id} is ${latest.status}` };
}

function demoNumber(id: string): number {
  if (id === DEMO_PREFIX) return 1;
  const n = Number(id.slice(DEMO_PREFIX.length + 1));
  return Number.isInteger(n) ? n : 0;
}

/** One look at the store and, if it is the time, one demo run queued. Returns the id queued, or the decision. */
export async function demoTick(
  store: Store & RunStore,
  registry: WorkflowRegistry,
  claimTtlMs: number,
): Promise<DemoDecision> {
  const runs = await store.listRuns({ limit: LOOK_AT, claimTtlMs });
  const decision = decideDemo(runs);
  if ('queue' in decision) {
    await startRun(store, registry, { id: decision.queue, workflow: 'agent-batch', input: DEMO_INPUT });
    if (decision.queue === DEMO_PREFIX && registry.has('review-and-send')) {
      await startRun(store, registry, { id: DEMO_REVIEW_ID, workflow: 'review-and-send', input: {} }).catch(
        () => undefined,
      );
    }
  }
  return decision;
}
