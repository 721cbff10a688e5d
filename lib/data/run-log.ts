import 'server-only';
/**
 * The last lines a command workflow's program printed, for the run page: read from the store (the worker
 * wrote them there, lib/engine/run-log.ts), so they show wherever the dashboard runs. None for other runs.
 */
import type { RunLogRow } from '../store/contract';
import { getStore } from './store';

/** Lines the run page shows; `waybill logs` and the API read every line the store kept. */
export const RUN_PAGE_LOG_LINES = 100;

export async function getRunLog(runId: string, lines = RUN_PAGE_LOG_LINES): Promise<RunLogRow[]> {
  return (await getStore()).readRunLogs(runId, { limit: lines });
}
