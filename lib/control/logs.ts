/**
 * A run's log, read: one page of the lines its program printed, as GET /api/v1/runs/{id}/logs answers and
 * `waybill logs` prints (once, or following). Without `after`, the newest `limit` lines; with it, the first
 * `limit` after that seq — a follower passes the `next` of its last page. Callers validate `after` and `limit`
 * at their edge (a query string, a flag).
 */
import { NotFoundError } from '../errors';
import type { Store } from '../store/contract';
import { runLogLineView } from './views';

export async function readRunLog(
  store: Store,
  runId: string,
  options: { after?: number; limit: number },
): Promise<{ runId: string; lines: ReturnType<typeof runLogLineView>[]; next: number; more: boolean }> {
  const rows = await store.readRunLogs(runId, {
    afterSeq: options.after,
    // One more than asked says whether there is more after this page.
    limit: options.after === undefined ? options.limit : options.limit + 1,
  });
  const more = rows.length > options.limit;
  const page = more ? rows.slice(0, options.limit) : rows;
  if (page.length === 0 && !(await runExists(store, runId))) throw new NotFoundError(`run ${runId}`);
  return { runId, lines: page.map(runLogLineView), next: page.at(-1)?.seq ?? options.after ?? 0, more };
}

/** A run row, or an outside client's progress or committed rows: a run with no log is still a run. */
export async function runExists(store: Store, runId: string): Promise<boolean> {
  if (await store.getRun(runId)) return true;
  if (await store.loadProgress(runId)) return true;
  return (await store.countCommitted(runId)) > 0;
}
