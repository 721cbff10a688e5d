/**
 * Which statuses each operator action may leave, and where it takes the run. One table for both backends
 * and for the pages that offer the actions.
 */
import type { RunAction, RunStatus } from '../contract';

export const TRANSITIONS: Record<RunAction, { from: RunStatus[]; to: RunStatus }> = {
  // A waiting run pauses and cancels like any other; resumed, it replays to its wait and parks again (or
  // goes on, if the wait was decided meanwhile). A rejected run is an answer, not a failure: not retried.
  pause: { from: ['queued', 'running', 'waiting'], to: 'paused' },
  resume: { from: ['paused'], to: 'queued' },
  cancel: { from: ['queued', 'running', 'paused', 'waiting'], to: 'cancelled' },
  retry: { from: ['failed', 'cancelled'], to: 'queued' },
};
