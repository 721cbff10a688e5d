/**
 * One run: where it is, how fast it goes, what it has committed, what is in flight, and what happened.
 * Everything comes from getRunDetail in one read; the page refreshes itself every two seconds.
 * The sign-in check and whether the run exists come first, outside the Suspense boundary, so that a
 * redirect to /login, a 403 or a 404 is the response's real status rather than a 200 already streaming.
 */
import type { Metadata } from 'next';
import { Suspense, type ReactNode } from 'react';
import Link from 'next/link';
import { notFound } from 'next/navigation';
import { z } from 'zod';
import { claimExpiresAt } from '@/lib/domain/claim-expiry';
import { LiveRefresh } from '@/app/components/live-refresh';
import {
  CumulativeChart,
  DurationsChart,
  type CumulativeSeries,
  type DurationSeries,
} from '@/app/components/run-charts';
import { JsonView } from '@/app/components/json-view';
import { Badge, Card, ProgressBar, Stat, relative } from '@/app/components/ui';
import { count } from '@/lib/count';
import { allows } from '@/lib/auth/principal';
import { requirePage } from '@/lib/auth/server';
import { claimTtlMs, getStore } from '@/lib/data/store';
import { getRunDetail, MAX_POINTS, runExists, TIMELINE_EVENTS, type RunDetail } from '@/lib/data/run-detail';
import { durationText, runDuration, utcText } from '@/lib/data/rates';
import { CommittedTable } from './committed-table';
import { LiveClaims, type LiveClaim } from './live-claims';
import { ProgramLog } from './program-log';
import { RewindActions } from './rewind-actions';
import { RunActions } from './run-actions';
import { StepInFlightLine } from './step-in-flight';
import RunSkeleton from './run-skeleton';
import { Timeline } from './timeline';
import { Trace, TRACE_STEPS } from './trace';
import { WaitsCard } from './waits-card';

export const dynamic = 'force-dynamic';

const idSchema = z.string().min(1).max(512);
const qSchema = z.string().trim().max(200, 'search at most 200 characters').optional();

type Props = { params: Promise<{ id: string }>; searchParams: Promise<Record<string, string | string[] | undefined>> };

/**
 * The segment as the run's id. Next 16 hands the page its dynamic param still percent-encoded
 * (`a%2520b` for the id `a%20b`) but generateMetadata the decoded one, so only the page decodes, once.
 */
function runIdFrom(param: string, { encoded }: { encoded: boolean }): string | null {
  let id = param;
  if (encoded) {
    try {
      id = decodeURIComponent(param);
    } catch {
      return null;
    }
  }
  const parsed = idSchema.safeParse(id);
  return parsed.success ? parsed.data : null;
}

export async function generateMetadata({ params }: Props): Promise<Metadata> {
  const id = runIdFrom((await params).id, { encoded: false });
  return { title: id ? `Run ${id}` : 'Run not found' };
}

export default async function RunPage({ params, searchParams }: Props) {
  const id = runIdFrom((await params).id, { encoded: true });
  // Signed in first: nobody else learns which run ids exist.
  const who = await requirePage(id ? `/runs/${encodeURIComponent(id)}` : '/');
  if (!id || !(await runExists(id))) notFound();
  return (
    <Suspense fallback={<RunSkeleton />}>
      <Run id={id} searchParams={searchParams} operator={allows(who, 'operator')} />
    </Suspense>
  );
}

async function Run({
  id,
  searchParams,
  operator,
}: {
  id: string;
  searchParams: Props['searchParams'];
  operator: boolean;
}) {
  const rawQ = (await searchParams).q;
  const parsedQ = qSchema.safeParse(Array.isArray(rawQ) ? rawQ[0] : rawQ);
  const q = parsedQ.success && parsedQ.data ? parsedQ.data : undefined;
  const qError = parsedQ.success ? undefined : parsedQ.error.issues[0]?.message;

  const rawAfter = (await searchParams).after;
  const parsedAfter = idSchema.safeParse(Array.isArray(rawAfter) ? rawAfter[0] : rawAfter);
  const after = parsedAfter.success ? parsedAfter.data : undefined;

  const detail = await getRunDetail(id, { q, after });
  if (!detail) notFound();
  const now = Date.now() / 1000;
  const { run } = detail;
  const store = await getStore();
  const forks = run.external ? [] : await store.listForks(run.id);
  const lastStep = run.totalSteps !== null ? run.totalSteps - 1 : Math.max(0, (detail.progress?.step ?? 1) - 1);
  // The trace's window: ?trace=N, else the steps up to where the run stands.
  const rawTrace = (await searchParams).trace;
  const traceAsked = Number(Array.isArray(rawTrace) ? rawTrace[0] : rawTrace);
  const traceFrom =
    Number.isInteger(traceAsked) && traceAsked >= 0 && traceAsked <= lastStep
      ? traceAsked
      : Math.max(0, Math.min(lastStep, detail.progress?.step ?? 0) - TRACE_STEPS + 1);
  const trace = await store.readTrace(run.id, traceFrom, TRACE_STEPS);
  const claims: LiveClaim[] = detail.claims.map((c) => ({
    key: c.idemKey,
    step: c.step,
    workerId: c.workerId,
    attempt: c.attempt,
    claimedAt: c.claimedAt,
    expiresAt: claimExpiresAt(c, claimTtlMs()),
    orphaned: c.orphaned,
  }));

  return (
    <div className="space-y-6">
      <Header detail={detail} now={now} operator={operator} />
      <Lineage run={run} forks={forks} />

      {/* Two columns on a wide screen. On a phone the columns dissolve (display: contents) so their cards
          interleave by `order`: what needs a decision (a claim in doubt, a warning) comes right after progress. */}
      <div className="flex flex-col gap-6 lg:grid lg:grid-cols-[minmax(0,2fr)_minmax(0,1fr)] lg:items-start">
        <div className="contents lg:block lg:min-w-0 lg:space-y-6">
          {/* durable waits (issue 15): what the run waits for, and the decision, above everything else */}
          <Slot order="order-1">
            <WaitsCard runId={id} operator={operator} status={run.status} now={now} />
          </Slot>
          <Slot order="order-1">
            <ProgressCard detail={detail} now={now} />
          </Slot>
          <Slot order="order-4">
            {/* Side by side on a tablet; stacked in the wide column, where a long run's series gets the width. */}
            <div className="grid grid-cols-1 gap-6 md:grid-cols-2 lg:grid-cols-1">
              <DurationsChart
                series={durationSeries(detail.durations)}
                sampledFrom={detail.committedCount > MAX_POINTS ? detail.committedCount : undefined}
              />
              <CumulativeChart series={cumulativeSeries(detail.cumulative)} />
            </div>
          </Slot>
        </div>

        <div className="contents lg:block lg:min-w-0 lg:space-y-6">
          <Slot order="order-2">
            <Card title={detail.claimCount.total === 1 ? 'Live claim' : 'Live claims'} testId="live-claim">
              {detail.inFlight && <StepInFlightLine step={detail.inFlight} serverNowMs={now * 1000} />}
              <LiveClaims claims={claims} serverNow={now} operator={operator} />
              {detail.claimCount.total > claims.length && (
                <p data-testid="claims-more" className="mt-3 text-xs text-zinc-600 dark:text-zinc-400">
                  The oldest {claims.length.toLocaleString('en-US')} of{' '}
                  {detail.claimCount.total.toLocaleString('en-US')} claims (
                  {detail.claimCount.orphaned.toLocaleString('en-US')} orphaned); every one is on the{' '}
                  <Link href="/claims" className="text-blue-700 hover:underline dark:text-blue-400">
                    claims page
                  </Link>
                  .
                </p>
              )}
            </Card>
          </Slot>
          <Slot order="order-3">
            <Warnings detail={detail} />
          </Slot>
          <Slot order="order-5">
            <RedoSave redoSave={detail.redoSave} />
          </Slot>
          <Slot order="order-6">
            <ProgramLog runId={run.id} />
          </Slot>
          <Slot order="order-7">
            <Card title="Timeline" testId="timeline">
              <Timeline
                events={detail.events}
                audit={detail.audit}
                now={now}
                truncated={detail.events.length >= TIMELINE_EVENTS}
              />
            </Card>
          </Slot>
        </div>
      </div>

      <div id="trace">
        <Card title="Trace" testId="trace-card">
          <Trace runId={run.id} bars={trace} from={traceFrom} lastStep={lastStep} />
        </Card>
      </div>
      {/* Full width: results are JSON, and an opened one needs the room. */}
      <CommittedTable
        runId={run.id}
        rows={detail.committed}
        total={detail.committedCount}
        q={q}
        qError={qError}
        now={now}
        after={after}
      />
      {!run.external && operator && (
        <Card title="Rerun or fork from a step" testId="rewind-card">
          <RewindActions
            runId={run.id}
            lastStep={lastStep}
            rerunnable={['completed', 'failed', 'cancelled', 'paused'].includes(run.status)}
          />
        </Card>
      )}
      {!run.external && <RunData detail={detail} />}
    </div>
  );
}

/** A fork links to its original, and an original to its forks. */
function Lineage({ run, forks }: { run: RunDetail['run']; forks: { id: string; forkedAtStep: number | null }[] }) {
  const link = 'font-mono text-blue-700 hover:underline dark:text-blue-400';
  const original = run.forkedFromRun;
  if (!original && forks.length === 0) return null;
  return (
    <div data-testid="run-lineage" className="space-y-1 text-sm text-zinc-600 dark:text-zinc-400">
      {original && (
        <p data-testid="forked-from">
          Forked from{' '}
          <Link href={`/runs/${encodeURIComponent(original)}`} className={link}>
            {original}
          </Link>
          {run.forkedAtStep !== null ? ` at step ${run.forkedAtStep}` : ''}: steps before it were copied from there.
        </p>
      )}
      {forks.length > 0 && (
        <p data-testid="forks">
          Forks:{' '}
          {forks.map((f, i) => (
            <span key={f.id}>
              {i > 0 && ', '}
              <Link href={`/runs/${encodeURIComponent(f.id)}`} className={link}>
                {f.id}
              </Link>
              {f.forkedAtStep !== null && ` (from step ${f.forkedAtStep})`}
            </span>
          ))}
        </p>
      )}
    </div>
  );
}

/** One card's place: its `order` only matters on a phone, where the two columns interleave. */
function Slot({ order, children }: { order: string; children: ReactNode }) {
  return <div className={`${order} min-w-0 empty:hidden`}>{children}</div>;
}

function ProgressCard({ detail, now }: { detail: RunDetail; now: number }) {
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

function RunData({ detail }: { detail: RunDetail }) {
  const { run, progress } = detail;
  const term = 'text-xs text-zinc-500 dark:text-zinc-400';
  return (
    <Card title="Input and output">
      <dl className="space-y-2 text-sm">
        <div>
          <dt className={term}>Input</dt>
          <dd>
            <JsonView json={run.inputJson} label="run input" testId="run-input" />
          </dd>
        </div>
        <div>
          <dt className={term}>Output</dt>
          <dd>
            <JsonView json={run.outputJson} label="run output" testId="run-output" />
          </dd>
        </div>
        {progress && (
          <div>
            <dt className={term}>Saved state</dt>
            <dd>
              <JsonView json={progress.stateJson} label="saved state" testId="run-state" />
            </dd>
          </div>
        )}
      </dl>
    </Card>
  );
}

function Header({ detail, now, operator }: { detail: RunDetail; now: number; operator: boolean }) {
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
        {!run.external && operator && <RunActions runId={run.id} actions={detail.actions} />}
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

function RedoSave({ redoSave }: { redoSave: RunDetail['redoSave'] }) {
  return (
    <Card title="Redo ÷ save" testId="redo-save">
      {redoSave ? (
        <div className="space-y-2">
          <p className="text-2xl font-semibold tabular-nums" data-testid="redo-save-ratio">
            {redoSave.ratio >= 10 ? count(redoSave.ratio) : redoSave.ratio.toFixed(1)}×
          </p>
          <p className="text-xs text-zinc-600 dark:text-zinc-400">
            median step{' '}
            <span className="font-medium tabular-nums text-zinc-800 dark:text-zinc-200">{ms(redoSave.stepMs)}</span>
            {' ÷ '}save{' '}
            <span className="font-medium tabular-nums text-zinc-800 dark:text-zinc-200">{ms(redoSave.saveMs)}</span>
          </p>
          <p className="text-sm" data-testid="redo-save-advice">
            {redoSave.advice}
          </p>
        </div>
      ) : (
        <p className="text-sm text-zinc-600 dark:text-zinc-400">
          Not measured yet: it needs a committed step and a timed progress save.
        </p>
      )}
    </Card>
  );
}

function Warnings({ detail }: { detail: RunDetail }) {
  if (detail.unstableKeys.length === 0 && detail.keyReuse.length === 0) return null;
  const box =
    'rounded-lg border border-amber-300 bg-amber-50 p-4 text-sm text-amber-900 dark:border-amber-800 dark:bg-amber-950/50 dark:text-amber-100';
  return (
    <div className="space-y-6">
      {detail.unstableKeys.length > 0 && (
        <section data-testid="warning-unstable" aria-labelledby="warning-unstable-title" className={box}>
          <h2 id="warning-unstable-title" className="font-semibold">
            ⚠ Steps committed under several keys
          </h2>
          <p className="mt-1 text-xs">
            Their keys changed between attempts (a time or an attempt number in the key?), so the side effect may have
            run more than once.
          </p>
          <ul className="mt-2 space-y-1">
            {detail.unstableKeys.map((u) => (
              <li key={u.keys.join('\n')} className="text-xs">
                <span className="font-medium">{unstableLabel(u)}:</span>{' '}
                <span className="break-all font-mono">{u.keys.join(', ')}</span>
              </li>
            ))}
          </ul>
        </section>
      )}
      {detail.keyReuse.length > 0 && (
        <section data-testid="warning-reuse" aria-labelledby="warning-reuse-title" className={box}>
          <h2 id="warning-reuse-title" className="font-semibold">
            ⚠ Keys reused with a different input
          </h2>
          <p className="mt-1 text-xs">The same idempotency key came with another input fingerprint, and was refused.</p>
          <ul className="mt-2 space-y-1">
            {detail.keyReuse.map((e) => (
              <li key={e.id} className="text-xs">
                <span className="break-all font-mono">{e.idemKey ?? '—'}</span>
                {e.detail && <span className="break-words">: {e.detail}</span>}
              </li>
            ))}
          </ul>
        </section>
      )}
    </div>
  );
}

function unstableLabel(u: RunDetail['unstableKeys'][number]): string {
  if (u.step !== null) return `step ${u.step}`;
  return {
    step: 'one step',
    fingerprint: 'the same input (fingerprint)',
    time: 'keys differing only in the time they ran',
    attempt: 'keys differing only in an attempt number',
  }[u.why];
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

function ms(value: number): string {
  return value >= 1000
    ? `${(value / 1000).toFixed(1)} s`
    : value >= 10
      ? `${Math.round(value)} ms`
      : `${value.toFixed(2)} ms`;
}

/** Columns, rounded to what a 240-pixel chart can show: three significant digits, so 0.25 ms stays 0.25 ms. */
function durationSeries(points: RunDetail['durations']): DurationSeries {
  return { step: points.map((p) => p.step), ms: points.map((p) => Number(p.durationMs.toPrecision(3))) };
}

function cumulativeSeries(points: RunDetail['cumulative']): CumulativeSeries {
  return {
    t: points.map((p) => Math.round(p.t)),
    executed: points.map((p) => p.executed),
    skipped: points.map((p) => p.skipped),
    awaited: points.map((p) => p.awaited),
  };
}
