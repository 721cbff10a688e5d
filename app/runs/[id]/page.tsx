/**
 * One run: where it is, how fast it goes, what it has committed, what is in flight, and what happened.
 * Everything comes from getRunDetail in one read; the page refreshes itself every two seconds.
 * The sign-in check and whether the run exists come first, outside the Suspense boundary, so that a
 * redirect to /login, a 403 or a 404 is the response's real status rather than a 200 already streaming.
 */
import type { Metadata } from 'next';
import Link from 'next/link';
import { notFound } from 'next/navigation';
import { type ReactNode, Suspense } from 'react';
import { z } from 'zod';
import { CumulativeChart, DurationsChart } from '@/app/components/run-charts';
import { Card } from '@/app/components/ui';
import { allows } from '@/lib/auth/principal';
import { requirePage } from '@/lib/auth/server';
import { config } from '@/lib/config';
import type { Caller } from '@/lib/control';
import { getRunChildren } from '@/lib/data/children';
import { callerOf } from '@/lib/data/control';
import { getRunLedger } from '@/lib/data/run-budget';
import { getRunDetail, MAX_POINTS, runExists, TIMELINE_EVENTS } from '@/lib/data/run-detail';
import { claimTtlMs, getStore } from '@/lib/data/store';
import { claimExpiresAt } from '@/lib/domain/claim-expiry';
import { cumulativeSeries, durationSeries } from './chart-series';
import { ChildrenCard } from './children-card';
import { CommittedTable } from './committed-table';
import { Lineage } from './lineage';
import { type LiveClaim, LiveClaims } from './live-claims';
import { ProgramLog } from './program-log';
import { ProgressCard } from './progress-card';
import { RedoSave } from './redo-save';
import { RewindActions } from './rewind-actions';
import { RunData } from './run-data';
import { Header } from './run-header';
import RunSkeleton from './run-skeleton';
import { RunTagsLine } from './run-tags';
import { StepInFlightLine } from './step-in-flight';
import { Timeline } from './timeline';
import { TRACE_STEPS, Trace } from './trace';
import { UsageCard } from './usage-card';
import { WaitsCard } from './waits-card';
import { Warnings } from './warnings';

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
      <Run id={id} searchParams={searchParams} operator={allows(who, 'operator')} caller={callerOf(who, 'dashboard')} />
    </Suspense>
  );
}

async function Run({
  id,
  searchParams,
  operator,
  caller,
}: {
  id: string;
  searchParams: Props['searchParams'];
  operator: boolean;
  caller: Caller;
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
  const ledger = run.external ? null : await getRunLedger(caller, run.id);
  const spentUsd = run.external ? null : (ledger?.costUsd ?? 0);
  const children = run.external ? null : await getRunChildren(run.id);
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
      <Header detail={detail} now={now} operator={operator} spentUsd={spentUsd} />
      <Lineage run={run} forks={forks} />
      <RunTagsLine tags={detail.tags} />

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
            <UsageCard runId={run.id} ledger={ledger} />
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
          {children && children.total > 0 && (
            <Slot order="order-2">
              <ChildrenCard parent={run.id} list={children} />
            </Slot>
          )}
          <Slot order="order-2">
            <Card title={detail.claimCount.total === 1 ? 'Live claim' : 'Live claims'} testId="live-claim">
              {detail.inFlight && <StepInFlightLine step={detail.inFlight} serverNowMs={now * 1000} />}
              <LiveClaims
                claims={claims}
                serverNow={now}
                operator={operator}
                maxResultBytes={config().WAYBILL_MAX_BODY_BYTES}
              />
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
            maxInputBytes={config().WAYBILL_MAX_BODY_BYTES}
          />
        </Card>
      )}
      {!run.external && <RunData detail={detail} />}
    </div>
  );
}

/** One card's place: its `order` only matters on a phone, where the two columns interleave. */
function Slot({ order, children }: { order: string; children: ReactNode }) {
  return <div className={`${order} min-w-0 empty:hidden`}>{children}</div>;
}
