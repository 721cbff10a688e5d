/**
 * The runs list: summary cards, filters in the URL, the newest activity first, keyset pages, bulk actions.
 */
import type { Metadata } from 'next';
import Link from 'next/link';
import { Suspense } from 'react';
import { isoTime } from '@/app/components/time';
import { allows } from '@/lib/auth/principal';
import { requirePage } from '@/lib/auth/server';
import type { StallCount } from '@/lib/control/stalled';
import { getRunsPage } from '@/lib/data/runs';
import { LiveRefresh } from './components/live-refresh';
import { RunsFilters } from './components/runs-filters';
import { isFiltered, parseRunsQuery, runsHref } from './components/runs-query';
import { RunsStats } from './components/runs-stats';
import { RunsTable, type RunsTableRow } from './components/runs-table';
import { buttonClass, EmptyState, relative } from './components/ui';
import { WaitingBanner } from './components/waiting-banner';
import RunsSkeleton from './runs-skeleton';

export const dynamic = 'force-dynamic';

// The root layout's title template applies to the pages below it, not to this page beside it: spelled out.
export const metadata: Metadata = { title: { absolute: 'Runs · Waybill' } };

const IGNORED_LABEL: Record<string, string> = {
  status: 'the status filter (unknown status)',
  waiting: 'the waiting filter (it is approval, signal or sleep)',
  'waiting-status': 'the waiting filter (it lists waiting runs only, and another status was asked for)',
  workflow: 'the workflow filter (too long)',
  q: 'the search (too long)',
  tag: 'some tags (a tag is 1-64 letters, digits and . _ : / @ -; at most 20)',
  meta: 'some metadata filters (each is key=value; at most 20)',
};

type SearchParams = Promise<Record<string, string | string[] | undefined>>;

export default async function RunsPage({ searchParams }: { searchParams: SearchParams }) {
  const who = await requirePage('/');
  return (
    <Suspense fallback={<RunsSkeleton />}>
      <RunsList searchParams={searchParams} operator={allows(who, 'operator')} />
    </Suspense>
  );
}

async function RunsList({ searchParams, operator }: { searchParams: SearchParams; operator: boolean }) {
  const { query, ignored } = parseRunsQuery(await searchParams);
  const page = await getRunsPage(query);
  const now = Date.now() / 1000;
  // Only what a row shows: the table is a client component, so every field given here is sent twice (its HTML and
  // its props), fifty times a page.
  const rows: RunsTableRow[] = page.runs.map(({ figures: { committed: _, ...figures }, ...run }) => ({
    id: run.id,
    workflow: run.workflow,
    status: run.status,
    orphanedClaims: run.orphanedClaims,
    owner: run.owner,
    error: run.error,
    figures,
    tags: run.tags,
    updatedLabel: relative(run.updatedAt, now),
    updatedTitle: isoTime(run.updatedAt),
    queuedReason: run.queuedReason?.message ?? null,
    stallMessage: run.stall?.message ?? null,
  }));
  const { stalled } = page.stats;
  const totalRuns = Object.values(page.stats.byStatus).reduce((sum, count) => sum + count, 0);
  const filtered = isFiltered(query);
  const filters = {
    status: query.status,
    waiting: query.waiting,
    workflow: query.workflow,
    q: query.q,
    parent: query.parent,
    tag: query.tag,
    meta: query.meta,
  };

  return (
    <div className="space-y-6">
      <header className="flex flex-wrap items-end justify-between gap-3">
        <div>
          <h1 className="text-2xl font-semibold tracking-tight">Runs</h1>
          <p className="mt-1 text-sm text-zinc-600 dark:text-zinc-400">
            Every durable run, the most recent activity first.
          </p>
        </div>
        <div className="flex items-center gap-2">
          <LiveRefresh />
          {operator && (
            <Link prefetch={false} href="/runs/new" data-testid="start-run-link" className={buttonClass('primary')}>
              Start a run
            </Link>
          )}
        </div>
      </header>

      <WaitingBanner waiting={page.waiting} now={now} />
      <RunsStats stats={page.stats} waiting={page.waiting} query={filters} />
      <StalledBanner stalled={stalled} />

      <section aria-labelledby="runs-heading" className="space-y-4">
        <h2 id="runs-heading" className="sr-only">
          Run list
        </h2>
        <RunsFilters key={runsHref(filters)} query={filters} workflows={page.workflows} />
        {ignored.length > 0 && (
          <p
            data-testid="filters-ignored"
            className="rounded-md bg-amber-50 px-3 py-2 text-sm text-amber-900 dark:bg-amber-950 dark:text-amber-200"
          >
            Ignored {ignored.map((key) => IGNORED_LABEL[key] ?? key).join(' and ')}.
          </p>
        )}

        {rows.length === 0 ? (
          totalRuns === 0 && !filtered ? (
            <div data-testid="runs-empty">
              <EmptyState title="No runs yet">
                <p>A run is one workflow executing durably: each step checkpointed, each side effect committed once.</p>
                <p className="mt-4 flex flex-wrap items-center justify-center gap-2">
                  {operator && (
                    <Link prefetch={false} href="/runs/new" className={buttonClass('primary')}>
                      Start your first run
                    </Link>
                  )}
                  <span>
                    {operator ? 'or ' : 'An operator starts one from here, or with '}
                    <code className="rounded bg-zinc-100 px-1 py-0.5 font-mono text-xs dark:bg-zinc-800">
                      waybill start agent-batch
                    </code>
                  </span>
                </p>
              </EmptyState>
            </div>
          ) : filtered ? (
            <div data-testid="runs-no-match">
              <EmptyState title="No runs match these filters">
                <p>
                  {totalRuns} run{totalRuns === 1 ? '' : 's'} in total.
                </p>
                <p className="mt-4">
                  <Link prefetch={false} href="/" className={buttonClass()}>
                    Clear filters
                  </Link>
                </p>
              </EmptyState>
            </div>
          ) : (
            <div data-testid="runs-no-more">
              <EmptyState title="No more runs">
                <p className="mt-2">
                  <Link prefetch={false} href="/" className={buttonClass()}>
                    Back to the first page
                  </Link>
                </p>
              </EmptyState>
            </div>
          )
        ) : (
          <RunsTable rows={rows} operator={operator} filter={filters} filtered={filtered} />
        )}

        {(page.next || query.cursor) && (
          <nav aria-label="Pages" className="flex flex-wrap items-center justify-between gap-2 text-sm">
            <span className="text-zinc-600 dark:text-zinc-400">
              {query.cursor ? 'A later page' : 'First page'} · {rows.length} run{rows.length === 1 ? '' : 's'} shown
            </span>
            <span className="flex gap-2">
              {query.cursor && (
                <Link prefetch={false} href={runsHref(filters)} data-testid="first-page" className={buttonClass()}>
                  <span aria-hidden>«</span> First page
                </Link>
              )}
              {page.next && (
                <Link
                  prefetch={false}
                  href={runsHref({ ...filters, cursor: page.next })}
                  data-testid="next-page"
                  className={buttonClass()}
                >
                  Next page <span aria-hidden>»</span>
                </Link>
              )}
            </span>
          </nav>
        )}
      </section>
    </div>
  );
}

/**
 * How many runs are stalled (lib/control/stalled.ts), each kind linked to the runs it counts: the queued ones
 * no live worker serves, the running ones whose owner went silent (counted here, not as running).
 */
function StalledBanner({ stalled }: { stalled: StallCount }) {
  const total = stalled.noLiveWorker + stalled.ownerSilent;
  if (total === 0) return null;
  const plus = stalled.atLeast ? '+' : '';
  const link = 'underline decoration-amber-400 underline-offset-4 hover:decoration-amber-700';
  return (
    <div
      data-testid="stalled-banner"
      role="status"
      className="rounded-lg border border-amber-300 bg-amber-50 px-4 py-3 text-sm text-amber-900 dark:border-amber-800 dark:bg-amber-950/40 dark:text-amber-200"
    >
      <p className="font-medium" data-testid="stalled-count">
        {total.toLocaleString('en-US')}
        {plus} run{total === 1 && !plus ? ' is' : 's are'} stalled
      </p>
      <ul className="mt-1 space-y-0.5">
        {stalled.noLiveWorker > 0 && (
          <li data-testid="stalled-no-worker">
            <Link prefetch={false} className={link} href={runsHref({ status: 'queued' })}>
              {stalled.noLiveWorker.toLocaleString('en-US')}
              {plus} queued
            </Link>{' '}
            with no live worker serving their workflow: start one (
            <code className="font-mono text-xs">waybill worker</code>).
          </li>
        )}
        {stalled.ownerSilent > 0 && (
          <li data-testid="stalled-owner-silent">
            <Link prefetch={false} className={link} href={runsHref({ status: 'running' })}>
              {stalled.ownerSilent.toLocaleString('en-US')}
              {plus} running
            </Link>{' '}
            on a worker that stopped heartbeating: another worker takes each over when its run lease passes (not counted
            as running).
          </li>
        )}
      </ul>
    </div>
  );
}
