/**
 * The one read of a page of the runs list, shared by the runs page (lib/data/runs.ts), GET /api/v1/runs
 * (lib/api/runs.ts) and `waybill runs`: the store's filtered, keyset-paged list, each run with why it is
 * stalled (stalled.ts) and what it waits for if queued (queued.ts), judged from one set of facts, and its tags.
 */
import type { RunStore, RunSummary, RunTagStore, RunTags } from '../store/contract';
import { type QueuedReason, queuedReasonOf } from './queued';
import { type Stall, type StallFacts, stallOf } from './stalled';

export type RunsFilter = Omit<Parameters<RunStore['listRuns']>[0], 'limit'> & { limit: number };

export interface RunsListPage {
  runs: (RunSummary & { stall: Stall | null; queuedReason: QueuedReason | null; tags: RunTags })[];
  /** The last run of the page when there is a next one: the next page is read after it. */
  next: RunSummary | null;
}

/** `facts` is the caller's: the pages share one read a second (lib/data/stalled.ts), the API and CLI read it now. */
export async function readRunsPage(
  store: Pick<RunStore & RunTagStore, 'listRuns' | 'getRunTagsOf'>,
  filter: RunsFilter,
  facts: Promise<StallFacts>,
): Promise<RunsListPage> {
  const [rows, judged] = await Promise.all([store.listRuns({ ...filter, limit: filter.limit + 1 }), facts]);
  const page = rows.slice(0, filter.limit);
  // The page's own runs' tags, in one read each of run_tags and run_metadata.
  const tags = await store.getRunTagsOf(page.map((row) => row.id));
  return {
    runs: page.map((row) => ({
      ...row,
      stall: stallOf(row, judged),
      queuedReason: queuedReasonOf(row, judged),
      tags: tags.get(row.id)!,
    })),
    next: rows.length > filter.limit ? (page.at(-1) ?? null) : null,
  };
}

/** Children counted at most by readChildren: past it the count says "more than". */
export const CHILDREN_COUNTED = 10_000;

/**
 * A parent's children, through the runs list's parent filter (so they agree with `/?parent=<id>`), in keyset
 * pages, up to CHILDREN_COUNTED of them: the run page's Children card counts them by status.
 */
export async function readChildren(
  store: Pick<RunStore, 'listRuns'>,
  parent: string,
  claimTtlMs: number,
): Promise<{ children: RunSummary[]; more: boolean }> {
  const PAGE = 500;
  const all: RunSummary[] = [];
  let after: { updatedAt: number; id: string } | undefined;
  for (;;) {
    const page = await store.listRuns({ parent, limit: PAGE, claimTtlMs, after });
    all.push(...page);
    if (page.length < PAGE || all.length > CHILDREN_COUNTED) break;
    const last = page.at(-1)!;
    after = { updatedAt: last.updatedAt, id: last.id };
  }
  return { children: all.slice(0, CHILDREN_COUNTED), more: all.length > CHILDREN_COUNTED };
}
