/**
 * When a worker counts as alive: the one rule the stall check, the queued-run explanation, the workers and
 * claims pages and the start catalog share. A worker is live while it has not stopped and its last heartbeat is
 * at most three beats old (WAYBILL_HEARTBEAT_MS), and never less than ten seconds: a busy machine delays a beat
 * or two, and calling a working worker dead is the worse mistake.
 */

/** The shortest window, whatever the heartbeat: ten seconds. */
export const LIVE_WITHIN_FLOOR_MS = 10_000;

/** How long after its last heartbeat a worker still counts as live. */
export function liveWithinMs(heartbeatMs: number): number {
  return Math.max(LIVE_WITHIN_FLOOR_MS, 3 * heartbeatMs);
}

export interface Heartbeating {
  stoppedAt: number | null;
  /** Epoch seconds. */
  heartbeatAt: number;
}

/** Whether `worker` is alive at `nowS` (epoch seconds) when workers beat every `heartbeatMs`. */
export function isLive(worker: Heartbeating | undefined, nowS: number, heartbeatMs: number): boolean {
  return (
    worker !== undefined && worker.stoppedAt === null && nowS - worker.heartbeatAt <= liveWithinMs(heartbeatMs) / 1000
  );
}
