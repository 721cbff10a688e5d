/**
 * A parent run's children for its run page (ctx.startChild): how many in each status, and the newest few with
 * whether each is detached. Read through the runs list's parent filter, in pages, so the counts and the list
 * agree with `/?parent=<id>`.
 */
import { readChildren } from '../control/runs-list';
import type { RunSummary } from '../store/contract';
import { claimTtlMs, getStore } from './store';

export const CHILDREN_SHOWN = 20;

export interface RunChildren {
  total: number;
  /** More than CHILDREN_COUNTED: total is then CHILDREN_COUNTED and the counts cover those. */
  more: boolean;
  byStatus: Record<string, number>;
  first: (Pick<RunSummary, 'id' | 'workflow' | 'status'> & { detached: boolean })[];
}

export async function getRunChildren(parent: string): Promise<RunChildren> {
  const store = await getStore();
  const { children: counted, more } = await readChildren(store, parent, claimTtlMs());
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
  return { total: counted.length, more, byStatus, first };
}
