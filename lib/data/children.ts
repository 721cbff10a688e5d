/**
 * A parent run's children for its run page (ctx.startChild): how many in each status, and the newest few with
 * whether each is detached, in one count and one page of the store (lib/control/runs-list.ts readChildren), the
 * set `/?parent=<id>` lists.
 */
import { readChildren } from '../control/runs-list';
import type { RunRow, RunStatus } from '../store/contract';
import { getStore } from './store';

export const CHILDREN_SHOWN = 20;

export interface RunChildren {
  total: number;
  byStatus: Partial<Record<RunStatus, number>>;
  first: Pick<RunRow, 'id' | 'workflow' | 'status' | 'detached'>[];
}

export async function getRunChildren(parent: string): Promise<RunChildren> {
  return readChildren(await getStore(), parent, CHILDREN_SHOWN);
}
