/**
 * Claims in flight: each idempotency key being executed, its lease counting down, its worker's heartbeat,
 * and the orphaned ones whose side effect is in doubt, with what an operator can do about them.
 */
import type { Metadata } from 'next';
import Link from 'next/link';
import { Suspense } from 'react';
import { ClaimBoard, ClaimMessage } from '@/app/components/claim-board';
import { ClaimSweep } from '@/app/components/claim-sweep';
import { CountdownTicker } from '@/app/components/countdown-ticker';
import { LiveRefresh } from '@/app/components/live-refresh';
import { EmptyState } from '@/app/components/ui';
import { allows } from '@/lib/auth/principal';
import { requirePage } from '@/lib/auth/server';
import { config } from '@/lib/config';
import { type ClaimView, getClaims } from '@/lib/data/claims';
import { ClaimRows, type ClaimRowView } from './claim-rows';
import ClaimsSkeleton from './claims-skeleton';

export const dynamic = 'force-dynamic';
export const metadata: Metadata = { title: 'Claims' };

const th = 'wb-th';
const link = 'wb-link';

export default async function ClaimsPage({
  searchParams,
}: {
  searchParams: Promise<Record<string, string | string[] | undefined>>;
}) {
  const raw = (await searchParams).cursor;
  const cursor = typeof raw === 'string' && raw.length <= 1000 ? raw : undefined;
  const who = await requirePage(cursor ? `/claims?cursor=${encodeURIComponent(cursor)}` : '/claims');
  return (
    <Suspense fallback={<ClaimsSkeleton />}>
      <Claims operator={allows(who, 'operator')} cursor={cursor} />
    </Suspense>
  );
}

async function Claims({ operator, cursor }: { operator: boolean; cursor: string | undefined }) {
  const { claims, orphaned, total, now, next } = await getClaims({ cursor });
  return (
    <ClaimBoard maxResultBytes={config().WAYBILL_MAX_BODY_BYTES}>
      <div className="space-y-6">
        <div className="flex flex-wrap items-start justify-between gap-4">
          <div className="space-y-1">
            <h1 className="flex flex-wrap items-center gap-3 text-2xl font-semibold tracking-tight">
              Claims
              <span
                data-testid="orphaned-count"
                className={`rounded-full px-2.5 py-0.5 text-sm font-medium ring-1 ring-inset ${
                  orphaned > 0
                    ? 'bg-orange-50 text-orange-800 ring-orange-200 dark:bg-orange-950 dark:text-orange-300 dark:ring-orange-900'
                    : 'bg-zinc-100 text-zinc-600 ring-zinc-300 dark:bg-zinc-800 dark:text-zinc-400 dark:ring-zinc-700'
                }`}
              >
                {orphaned} orphaned
              </span>
            </h1>
            <p className="max-w-2xl text-sm text-zinc-600 dark:text-zinc-400">
              {/* An orphaned claim is not being executed: its holder stopped. Counted apart, never as live work. */}
              <span data-testid="claims-live-count">{claimsSummary(total, orphaned)}</span> A claim whose lease passed
              is orphaned: its holder stopped mid-execute, so nobody knows whether the side effect happened.
            </p>
          </div>
          <div className="flex items-center gap-2">
            {operator && <ClaimSweep orphaned={orphaned} />}
            <LiveRefresh />
          </div>
        </div>

        <ClaimMessage />
        <CountdownTicker />

        {claims.length === 0 ? (
          <EmptyState title="No claims in flight">
            Claims appear here while a worker executes a step, and stay if it dies before committing.
          </EmptyState>
        ) : (
          <div
            role="region"
            aria-label="Claims in flight"
            tabIndex={0}
            className="overflow-x-auto rounded-lg border border-zinc-200 bg-white shadow-sm focus-visible:outline-2 focus-visible:outline-blue-600 dark:border-zinc-800 dark:bg-zinc-900"
          >
            <table data-testid="claims-table" className="w-full min-w-[70rem] text-sm">
              <caption className="sr-only">Claims in flight, orphaned ones first</caption>
              <thead className="border-b border-zinc-200 bg-zinc-50 dark:border-zinc-800 dark:bg-zinc-900/60">
                <tr>
                  <th scope="col" className={th}>
                    Key
                  </th>
                  <th scope="col" className={th}>
                    Run
                  </th>
                  <th scope="col" className={`${th} text-right`}>
                    Step
                  </th>
                  <th scope="col" className={`${th} text-right`}>
                    Attempt
                  </th>
                  <th scope="col" className={th}>
                    Worker
                  </th>
                  <th scope="col" className={th}>
                    Heartbeat
                  </th>
                  <th scope="col" className={th}>
                    Lease
                  </th>
                  <th scope="col" className={th}>
                    State
                  </th>
                </tr>
              </thead>
              <tbody className="divide-y divide-zinc-200 dark:divide-zinc-800">
                <ClaimRows claims={claims.map(claimRowView)} now={now} operator={operator} />
              </tbody>
            </table>
          </div>
        )}
        {(next || cursor) && (
          <nav aria-label="Pages" className="flex flex-wrap items-center justify-between gap-2 text-sm">
            <span className="text-zinc-600 dark:text-zinc-400">
              {claims.length} of {total} claims shown, oldest first
            </span>
            <span className="flex gap-2">
              {cursor && (
                <Link prefetch={false} href="/claims" data-testid="claims-first-page" className={link}>
                  « First page
                </Link>
              )}
              {next && (
                <Link prefetch={false} href={`/claims?cursor=${next}`} data-testid="claims-next-page" className={link}>
                  Next page »
                </Link>
              )}
            </span>
          </nav>
        )}
        {claims.length > 0 && (
          <p className="text-xs text-zinc-500 dark:text-zinc-400">
            Leases count down by your browser&apos;s clock; whether a claim is orphaned is the store&apos;s call,
            refreshed every two seconds while Live is on.
          </p>
        )}
      </div>
    </ClaimBoard>
  );
}

/** The fields a row shows (see ClaimRowView): here, on the server, because a client module's exports are not callable from it. */
function claimRowView(c: ClaimView): ClaimRowView {
  return {
    idemKey: c.idemKey,
    runId: c.runId,
    step: c.step,
    attempt: c.attempt,
    workerId: c.workerId,
    heartbeatAge: c.heartbeatAge,
    workerAlive: c.workerAlive,
    expiresAt: c.expiresAt,
    orphaned: c.orphaned,
    outsideClient: c.outsideClient,
  };
}

/** "3 side effects being executed right now, 2 orphaned claims." */
function claimsSummary(total: number, orphaned: number): string {
  const live = Math.max(0, total - orphaned);
  const executing =
    live === 0
      ? 'No side effect is being executed right now'
      : `${live} side effect${live === 1 ? '' : 's'} being executed right now`;
  return orphaned === 0
    ? `${executing}.`
    : `${executing}; ${orphaned} orphaned claim${orphaned === 1 ? '' : 's'}, whose side effect is in doubt.`;
}
