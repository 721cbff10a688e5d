import 'server-only';
/**
 * The last lines a command workflow's program printed, for the run page (lib/engine/run-log.ts keeps them in
 * the data directory). Empty for every other run, and where this dashboard does not share the workers' data
 * directory.
 */
import { config, dataDir } from '../config';
import { tailRunLog, type RunLogLine } from '../engine/run-log';

export function getRunLog(runId: string, lines = 20): RunLogLine[] {
  try {
    return tailRunLog(dataDir(config()), runId, lines);
  } catch {
    return []; // unreadable: the page shows everything else
  }
}
