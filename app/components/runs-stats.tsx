/**
 * The runs list's summary cards: how many runs are in each status (each card filters the list), then the
 * last minute's throughput (a run's pace as it is now, not averaged over an hour it did not fill), how much
 * replay skipped, and the claims whose side effect is in doubt.
 */
import Link from 'next/link';
import type { RunsPage } from '@/lib/data/runs';
import { RUN_STATUSES, type RunsQueryParams, runsHref, WAIT_KINDS, WAITING_LABEL } from './runs-query';
import { Stat } from './ui';

const STATUS_LABEL: Record<(typeof RUN_STATUSES)[number], string> = {
  running: 'Running',
  waiting: 'Waiting',
  queued: 'Queued',
  paused: 'Paused',
  failed: 'Failed',
  completed: 'Completed',
  cancelled: 'Cancelled',
  rejected: 'Rejected',
  idle: 'Idle (external)',
};

const cardLink =
  'block rounded-lg focus-visible:outline-2 focus-visible:outline-offset-2 focus-visible:outline-blue-600 [&>div]:h-full [&>div]:transition-colors hover:[&>div]:border-zinc-400 dark:hover:[&>div]:border-zinc-600';

export function RunsStats({
  stats,
  waiting,
  query,
}: {
  stats: RunsPage['stats'];
  waiting: RunsPage['waiting'];
  query: RunsQueryParams;
}) {
  const perMinute = stats.stepsPerMinute;
  const seen = stats.executed + stats.skipped + stats.awaited;
  return (
    <div className="space-y-3">
      <h2 className="sr-only">Summary</h2>
      <ul className="grid grid-cols-3 gap-3 sm:grid-cols-4 lg:grid-cols-9" aria-label="Runs by status">
        {RUN_STATUSES.map((status) => {
          const active = query.status === status;
          return (
            <li key={status} className="max-sm:last:col-span-3">
              <Link
                prefetch={false}
                href={runsHref({ ...query, status: active ? undefined : status, cursor: undefined })}
                aria-current={active ? 'true' : undefined}
                title={active ? 'Show every status' : `Show only ${status} runs`}
                className={`${cardLink} ${active ? '[&>div]:border-blue-500 [&>div]:ring-1 [&>div]:ring-blue-500 dark:[&>div]:border-blue-400 dark:[&>div]:ring-blue-400' : ''}`}
              >
                <Stat
                  testId={`stat-${status}`}
                  label={STATUS_LABEL[status]}
                  value={
                    <>
                      {stats.byStatus[status] ?? 0}
                      {/* Counted by status, as the rows' badges show it; the stalled among them said beside. */}
                      {status === 'running' && stats.stalled.ownerSilent > 0 && (
                        <span
                          data-testid="stat-running-stalled"
                          className="ml-1.5 text-xs font-medium text-amber-800 dark:text-amber-300"
                        >
                          {stats.stalled.atLeast ? '≥' : ''}
                          {stats.stalled.ownerSilent.toLocaleString('en-US')} stalled
                        </span>
                      )}
                    </>
                  }
                />
              </Link>
            </li>
          );
        })}
      </ul>
      <WaitingFilters waiting={waiting} query={query} />
      <div className="grid grid-cols-3 gap-3">
        <Stat
          testId="stat-steps-per-minute"
          label="Steps / min · last minute"
          value={
            <span
              title={`${stats.committedSince} steps committed in the last ${stats.windowSeconds} seconds, across all runs`}
            >
              {perMinute >= 10 ? perMinute.toFixed(0) : perMinute.toFixed(1)}
            </span>
          }
        />
        <Stat
          testId="stat-skip-ratio"
          label="Skip ratio"
          value={
            <span
              title={`${stats.skipped} skipped of ${seen} steps seen (executed ${stats.executed}, awaited ${stats.awaited})`}
            >
              {seen === 0 ? '—' : `${(stats.skipRatio * 100).toFixed(1)}%`}
            </span>
          }
        />
        <div
          className={
            stats.orphanedClaims > 0
              ? '[&>div]:h-full [&>div]:border-orange-300 [&>div]:bg-orange-50 dark:[&>div]:border-orange-800 dark:[&>div]:bg-orange-950/40'
              : '[&>div]:h-full'
          }
        >
          <Stat
            testId="stat-orphaned"
            label="Orphaned claims"
            value={
              stats.orphanedClaims > 0 ? (
                <Link
                  prefetch={false}
                  href="/claims"
                  className="rounded text-orange-700 underline decoration-orange-300 underline-offset-4 hover:decoration-orange-600 focus-visible:outline-2 focus-visible:outline-blue-600 dark:text-orange-300 dark:decoration-orange-700"
                >
                  {stats.orphanedClaims}
                  <span className="sr-only"> orphaned claims: review them</span>
                </Link>
              ) : (
                <span className="text-zinc-500 dark:text-zinc-400">0</span>
              )
            }
          />
        </div>
      </div>
    </div>
  );
}

const chip =
  'inline-flex items-center gap-1.5 rounded-full border px-2.5 py-0.5 text-xs font-medium focus-visible:outline-2 focus-visible:outline-offset-2 focus-visible:outline-blue-600';

/**
 * The waiting runs by what they wait for, each a filter (`?waiting=approval`): a person's decision is the one
 * a run can wait for forever, so its count is always shown, zero included.
 */
function WaitingFilters({ waiting, query }: { waiting: RunsPage['waiting']; query: RunsQueryParams }) {
  const runs = (kind: string) => waiting.find((w) => w.kind === kind)?.runs ?? 0;
  return (
    <ul className="flex flex-wrap items-center gap-2" aria-label="Waiting runs by what they wait for">
      {WAIT_KINDS.map((kind) => {
        const active = query.waiting === kind;
        const count = runs(kind);
        const tone = active
          ? 'border-blue-500 bg-blue-50 text-blue-900 dark:border-blue-400 dark:bg-blue-950 dark:text-blue-100'
          : kind === 'approval' && count > 0
            ? 'border-amber-300 bg-amber-50 text-amber-900 hover:border-amber-500 dark:border-amber-800 dark:bg-amber-950/40 dark:text-amber-200'
            : 'border-zinc-200 text-zinc-700 hover:border-zinc-400 dark:border-zinc-800 dark:text-zinc-300';
        return (
          <li key={kind}>
            <Link
              prefetch={false}
              data-testid={`waiting-filter-${kind}`}
              href={runsHref({
                ...query,
                status: query.status === 'waiting' ? 'waiting' : undefined,
                waiting: active ? undefined : kind,
                cursor: undefined,
              })}
              aria-current={active ? 'true' : undefined}
              title={active ? 'Show every waiting run and every status' : `Show only runs ${WAITING_LABEL[kind]}`}
              className={`${chip} ${tone}`}
            >
              <span className="first-letter:uppercase">{WAITING_LABEL[kind]}</span>
              <span data-testid={`waiting-count-${kind}`} className="tabular-nums">
                {count.toLocaleString('en-US')}
              </span>
            </Link>
          </li>
        );
      })}
    </ul>
  );
}
