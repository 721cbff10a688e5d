/** The run page's header: the run, its status and facts, why it is stalled or queued, its times, its error. */
import Link from 'next/link';
import type { ReactNode } from 'react';
import { LiveRefresh } from '@/app/components/live-refresh';
import { Badge, relative } from '@/app/components/ui';
import { durationText, runDuration, utcText } from '@/lib/data/rates';
import type { RunDetail } from '@/lib/data/run-detail';
import { BudgetForm } from './budget-form';
import { RunActions } from './run-actions';

export function Header({
  detail,
  now,
  operator,
  spentUsd,
}: {
  detail: RunDetail;
  now: number;
  operator: boolean;
  /** What the run has spent through the gateway; null for an outside client's run (no budget to hold it to). */
  spentUsd: number | null;
}) {
  const { run } = detail;
  return (
    <header className="space-y-4">
      <nav aria-label="Breadcrumb" className="text-sm text-zinc-600 dark:text-zinc-400">
        <Link
          prefetch={false}
          href="/"
          className="rounded hover:text-zinc-900 focus-visible:outline-2 focus-visible:outline-blue-600 dark:hover:text-zinc-100"
        >
          Runs
        </Link>
        <span aria-hidden> / </span>
        <span className="break-all">{run.id}</span>
      </nav>
      <div className="flex flex-col gap-4 sm:flex-row sm:items-start sm:justify-between">
        <div className="min-w-0 space-y-2">
          <div className="flex flex-wrap items-center gap-3">
            <h1 data-testid="run-id" className="break-all font-mono text-xl font-semibold tracking-tight">
              {run.id}
            </h1>
            <Badge value={run.status} testId="run-status" />
            <LiveRefresh />
          </div>
          <dl className="flex flex-wrap gap-x-6 gap-y-1 text-sm">
            <Fact label="Workflow" testId="run-workflow">
              {run.workflow}
            </Fact>
            <Fact label="Worker" testId="run-owner">
              {run.owner ?? '—'}
            </Fact>
            <Fact label="Attempts" testId="run-attempts">
              {run.attempts}
            </Fact>
            {run.priority !== 0 && (
              <Fact label="Priority" testId="run-priority">
                {run.priority}
              </Fact>
            )}
            <Fact label="Created">
              <When at={run.external ? null : run.createdAt} now={now} />
            </Fact>
            {/* The latest of the run row's time and its progress's: a step's commit moves only the progress. */}
            <Fact label="Updated" testId="run-updated">
              <When at={detail.lastActivityAt} now={now} />
            </Fact>
          </dl>
          {detail.stall && detail.stall.kind !== 'no-live-worker' && (
            <p data-testid="run-stall-reason" className="text-sm font-medium text-amber-800 dark:text-amber-300">
              Stalled: {detail.stall.message}
            </p>
          )}
          {detail.queuedReason && (
            <p
              data-testid="run-queued-reason"
              className={`text-sm ${detail.stall ? 'font-medium text-amber-800 dark:text-amber-300' : 'text-zinc-600 dark:text-zinc-400'}`}
            >
              Queued: {detail.queuedReason.message}
            </p>
          )}
          <RunTimes run={run} now={now} />
          {run.external && (
            <p data-testid="run-external" className="text-sm text-zinc-600 dark:text-zinc-400">
              This run was written by an outside client: it has progress and claims but no run row, so there is nothing
              to pause or retry from here.
            </p>
          )}
        </div>
        {!run.external && (
          <div className="flex flex-col items-start gap-3 sm:items-end">
            {operator && <RunActions runId={run.id} actions={detail.actions} />}
            {spentUsd !== null && (
              <BudgetForm
                runId={run.id}
                budgetUsd={run.budgetUsd}
                spentUsd={spentUsd}
                paused={run.status === 'paused'}
                operator={operator}
              />
            )}
          </div>
        )}
      </div>
      {run.status === 'failed' && run.error && (
        <div
          data-testid="run-error"
          role="alert"
          className="rounded-lg border border-red-200 bg-red-50 px-4 py-3 text-sm text-red-800 dark:border-red-900 dark:bg-red-950/60 dark:text-red-200"
        >
          <p className="font-medium">The run failed</p>
          <p className="mt-1 whitespace-pre-wrap break-words font-mono text-xs">{run.error}</p>
        </div>
      )}
    </header>
  );
}

/** A relative time with its absolute one on hover; "never" when there is no time to show. */
function When({ at, now }: { at: number | null; now: number }) {
  const text = utcText(at);
  if (at === null || text === null) return <span className="text-zinc-500 dark:text-zinc-400">never</span>;
  return (
    <time dateTime={new Date(at * 1000).toISOString()} title={text}>
      {relative(at, now)}
    </time>
  );
}

/** Started, finished and how long it took, as absolute times: "3m ago" does not say when a run ran. */
function RunTimes({ run, now }: { run: RunDetail['run']; now: number }) {
  if (run.external) return null;
  const started = utcText(run.startedAt);
  const finished = utcText(run.finishedAt);
  const took = runDuration(run.startedAt, run.finishedAt, now);
  return (
    <dl data-testid="run-times" className="flex flex-wrap gap-x-6 gap-y-1 text-sm">
      <Fact label="Started" testId="run-started">
        {started ?? 'not yet'}
      </Fact>
      <Fact label="Finished" testId="run-finished">
        {finished ?? (started ? 'not yet' : '—')}
      </Fact>
      <Fact label="Duration" testId="run-duration">
        {took ? `${durationText(took.seconds)}${took.ongoing ? ' so far' : ''}` : '—'}
      </Fact>
    </dl>
  );
}

function Fact({ label, testId, children }: { label: string; testId?: string; children: ReactNode }) {
  return (
    <div className="flex gap-1.5">
      <dt className="text-zinc-500 dark:text-zinc-400">{label}</dt>
      <dd data-testid={testId} className="break-all font-medium">
        {children}
      </dd>
    </div>
  );
}
