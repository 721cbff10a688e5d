/**
 * The one read of a page of the runs list, shared by the runs page (lib/data/runs.ts), GET /api/v1/runs
 * (lib/api/runs.ts) and `waybill runs`: the store's filtered, keyset-paged list, each run with why it is
 * stalled (stalled.ts) and what it waits for if queued (queued.ts), judged from one set of facts, and its tags.
 */
import type { RunStore, RunSummary, RunTagStore, RunTags } from '../store/contract';
import { type QueuedReason, queuedReasons } from './queued';
import { type Stall, type StallFacts, stallOf } from './stalled';

export type RunsFilter = Omit<Parameters<RunStore['listRuns']>[0], 'limit'> & { limit: number };

export interface RunsListPage {
  runs: (RunSummary & { stall: Stall | null; queuedReason: QueuedReason | null; tags: RunTags })[];
  /** The last run of the page when there is a next one: the next page is read after it. */
  next: RunSummary | null;
}

/** `facts` is the caller's: the pages share one read a second (lib/data/stalled.ts), the API and CLI read it now. */
export async function readRunsPage(
  store: Pick<RunStore & RunTagStore, 'listRuns' | 'getRunTagsOf' | 'limitUses'>,
  filter: RunsFilter,
  facts: Promise<StallFacts>,
): Promise<RunsListPage> {
  const [rows, judged] = await Promise.all([store.listRuns({ ...filter, limit: filter.limit + 1 }), facts]);
  const page = rows.slice(0, filter.limit);
  // The page's own runs' tags, in one read each of run_tags and run_metadata; their limits' use in one read.
  const [tags, reasons] = await Promise.all([
    store.getRunTagsOf(page.map((row) => row.id)),
    queuedReasons(store, page, judged),
  ]);
  return {
    runs: page.map((row) => ({
      ...row,
      stall: stallOf(row, judged),
      queuedReason: reasons.get(row.id) ?? null,
      tags: tags.get(row.id)!,
    })),
    next: rows.length > filter.limit ? (page.at(-1) ?? null) : null,
  };
}

/**
 * A parent's children for its run page: how many in each status (all of them, counted by runs_parent), and the
 * newest `first`, the runs list's `/?parent=<id>` set and order.
 */
export async function readChildren(store: Pick<RunStore, 'childrenOf'>, parent: string, first: number) {
  const { byStatus, first: newest } = await store.childrenOf(parent, first);
  const total = Object.values(byStatus).reduce((sum, n) => sum + (n ?? 0), 0);
  return { total, byStatus, first: newest };
}
