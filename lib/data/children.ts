/**
 * A parent run's children for its run page (ctx.startChild): how many in each status, and the newest few with
 * whether each is detached. Read through the runs list's parent filter, in pages, so the counts and the list
 * agree with `/?parent=<id>`.
 */
import type { RunSummary } from '../store/contract';
import { claimTtlMs, getStore } from './store';

export const CHILDREN_SHOWN = 20;
/** Children counted at most: past it the card says "more than". */
export const CHILDREN_COUNTED = 10_000;
const PAGE = 500;

export interface RunChildren {
  total: number;
  /** More than CHILDREN_COUNTED: total is then CHILDREN_COUNTED and the counts cover those. */
  more: boolean;
  byStatus: Record<string, number>;
  first: (Pick<RunSummary, 'id' | 'workflow' | 'status'> & { detached: boolean })[];
}

export async function getRunChildren(parent: string): Promise<RunChildren> {
  const store = await getStore();
  const all: RunSummary[] = [];
  let after: { updatedAt: number; id: string } | undefined;
  for (;;) {
    const page = await store.listRuns({ parent, limit: PAGE, claimTtlMs: claimTtlMs(), after });
    all.push(...page);
    if (page.length < PAGE || all.length > CHILDREN_COUNTED) break;
    const last = page.at(-1)!;
    after = { updatedAt: last.updatedAt, id: last.id };
  }
  const counted = all.slice(0, CHILDREN_COUNTED);
  const byStatus: Record<string, number> = {};
  for (const child of counted) byStatus[child.status] = (byStatus[child.status] ?? 0) + 1;
  const first = await Promise.all(
    counted.slice(0, CHILDREN_SHOWN).map(async (c) => ({
      id: c.id,
      workflow: c.workflow,
      status: c.status,
      detached: (await store.getRun(c.id))?.detached ?? false,
    })),
  );
  return { total: counted.length, more: all.length > CHILDREN_COUNTED, byStatus, first };
}
