/** Where the run stands: its figures, and when it ends at its recent rate, or why no promise is made. */
import { Card, ProgressBar, relative, Stat } from '@/app/components/ui';
import type { RunDetail } from '@/lib/data/run-detail';

export function ProgressCard({ detail, now }: { detail: RunDetail; now: number }) {
  const { run, progress, figures } = detail;
  return (
    <Card title="Progress" testId="run-progress-card">
      <div data-testid="run-progress">
        <ProgressBar figures={figures} label={`progress of run ${run.id}`} />
      </div>
      <div className="mt-4 grid grid-cols-2 gap-3 sm:grid-cols-4">
        <Stat label="Executed" value={figures.executed} testId="run-executed" />
        <Stat label="Skipped (replayed)" value={figures.skipped} testId="run-skipped" />
        <Stat label="Awaited" value={figures.awaited} testId="run-awaited" />
        <Stat label="Committed" value={figures.committed} testId="run-committed" />
      </div>
      <p className="mt-3 text-sm text-zinc-600 dark:text-zinc-400">
        {/* A stalled run's rate is its past, not a promise: the stall reason above says what it waits for. */}
        {detail.stall && progress ? (
          <>
            Last saved {relative(progress.updatedAt, now)} at step {progress.step}.
          </>
        ) : detail.eta && progress && stalled(detail.eta, progress.updatedAt, now) ? (
          <span data-testid="run-stalled" className="text-amber-800 dark:text-amber-300">
            No progress for {relative(progress.updatedAt, now).replace(' ago', '')}: its worker may have died; another
            worker takes the run over once its lease passes.
          </span>
        ) : detail.eta ? (
          <span data-testid="run-eta">{eta(detail.eta)}</span>
        ) : progress ? (
          <>
            Last saved {relative(progress.updatedAt, now)} at step {progress.step}.
          </>
        ) : figures.committed > 0 ? (
          // Named steps (ctx.step) save no map: their committed results are the progress.
          <>
            {figures.committed.toLocaleString('en-US')} step{figures.committed === 1 ? '' : 's'} committed; this run
            saves no map of its own.
          </>
        ) : (
          <>Nothing committed yet.</>
        )}
      </p>
    </Card>
  );
}

function eta(e: NonNullable<RunDetail['eta']>): string {
  const s = Math.round(e.seconds);
  const left =
    s < 60 ? `${s}s` : s < 3600 ? `${Math.round(s / 60)}m` : `${Math.floor(s / 3600)}h ${Math.round((s % 3600) / 60)}m`;
  const rate =
    e.stepsPerMinute >= 10 ? Math.round(e.stepsPerMinute).toLocaleString('en-US') : e.stepsPerMinute.toFixed(1);
  return `~${left} left at ${rate} steps/min`;
}

/** A projection from a rate that stopped long ago is a wrong promise: past ten steps' time (a minute at least), say so. */
function stalled(e: NonNullable<RunDetail['eta']>, updatedAt: number, now: number): boolean {
  return now - updatedAt > Math.max(60, 600 / e.stepsPerMinute);
}
