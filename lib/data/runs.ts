import 'server-only';
import { metaPairs } from '../control/fields';
import { type RunFigures, runFigures } from '../control/figures';
import type { QueuedReason } from '../control/queued';
import { readRunsPage } from '../control/runs-list';
import type { Stall, StallCount } from '../control/stalled';
/**
 * The runs list: one page of runs (keyset cursor), the summary cards, and the filters' choices.
 */
import { runsCursor } from '../domain/cursor';
import type { RunStats, RunStatus, RunSummary, RunTags, WaitingKind, WaitKind } from '../store/contract';
import { stepsPerMinute, THROUGHPUT_WINDOW_S } from './rates';
import { sharedRead } from './shared-read';
import { getStallCount, getStallFacts } from './stalled';
import { claimTtlMs, getCatalog, getStore } from './store';

export const PAGE_SIZE = 50;

export interface RunsQuery {
  status?: RunStatus | 'idle';
  waiting?: WaitKind;
  workflow?: string;
  q?: string;
  parent?: string;
  tag?: string[];
  /** `key=value` texts, as the URL has them. */
  meta?: string[];
  cursor?: string;
}

export interface RunsPage {
  /**
   * Each with why it is stalled (lib/control/stalled.ts), what it waits for if queued (queued.ts), and its
   * figures (figures.ts).
   */
  runs: (RunSummary & { stall: Stall | null; queuedReason: QueuedReason | null; figures: RunFigures; tags: RunTags })[];
  /** Opaque cursor of the next page, or null on the last. */
  next: string | null;
  /**
   * `committedSince` counts the last THROUGHPUT_WINDOW_S seconds; `stepsPerMinute` is the rate over them.
   * byStatus counts runs by their status, as their badges show it and the status filter lists them: a running
   * run whose owner went silent is running (as Temporal's is), and `stalled` counts those apart, with the
   * queued runs no live worker serves.
   */
  stats: RunStats & { stalled: StallCount; stepsPerMinute: number; skipRatio: number; windowSeconds: number };
  /** Runs waiting now by the kind of their wait, each kind's oldest wait named (the waiting line and cards). */
  waiting: WaitingKind[];
  workflows: string[];
}

export async function getRunsPage(query: RunsQuery): Promise<RunsPage> {
  const store = await getStore();
  const [{ runs, next }, stats, catalog, stalled, waiting] = await Promise.all([
    readRunsPage(
      store,
      {
        status: query.status,
        waiting: query.waiting,
        workflow: query.workflow,
        search: query.q || undefined,
        parent: query.parent,
        tags: query.tag?.length ? query.tag : undefined,
        meta: metaPairs(query.meta),
        limit: PAGE_SIZE,
        claimTtlMs: claimTtlMs(),
        after: decodeCursor(query.cursor),
      },
      getStallFacts(),
    ),
    getStats(),
    getFilterCatalog(),
    getStallCount(),
    getWaiting(),
  ]);
  const seen = stats.executed + stats.skipped + stats.awaited;
  return {
    runs: runs.map((run) => ({ ...run, figures: runFigures(run) })),
    next: next ? encodeCursor({ updatedAt: next.updatedAt, id: next.id }) : null,
    stats: {
      ...stats,
      byStatus: stats.byStatus,
      stalled,
      stepsPerMinute: stepsPerMinute(stats.committedSince),
      windowSeconds: THROUGHPUT_WINDOW_S,
      skipRatio: seen === 0 ? 0 : stats.skipped / seen,
    },
    waiting,
    workflows: [...catalog.names(), 'external'],
  };
}

/**
 * The summary cards read every run's counters, the one read on this page that grows with the store; they, the
 * waiting line and the workflows to filter by are shared reads (shared-read.ts), at most one a second.
 */
const getStats = sharedRead(async () =>
  (await getStore()).runStats({ sinceSeconds: Date.now() / 1000 - THROUGHPUT_WINDOW_S, claimTtlMs: claimTtlMs() }),
);
const getWaiting = sharedRead(async () => (await getStore()).waitingSummary());
const getFilterCatalog = sharedRead(getCatalog);

const encodeCursor = runsCursor.encode;

/** A cursor that does not decode is treated as none: it came from a URL anyone can edit. */
const decodeCursor = (raw: string | undefined) => (raw ? (runsCursor.decode(raw) ?? undefined) : undefined);
