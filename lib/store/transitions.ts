/**
 * Which statuses each operator action may leave, and where it takes the run. One table for both backends
 * and for the pages that offer the actions.
 */
import type { RunAction, RunStatus } from './types';

export const TRANSITIONS: Record<RunAction, { from: RunStatus[]; to: RunStatus }> = {
  pause: { from: ['queued', 'running'], to: 'paused' },
  resume: { from: ['paused'], to: 'queued' },
  cancel: { from: ['queued', 'running', 'paused'], to: 'cancelled' },
  retry: { from: ['failed', 'cancelled'], to: 'queued' },
};
