/**
 * Workers: each process that has registered, its heartbeat, whether it is alive, and the runs it holds.
 */
import type { Metadata } from 'next';
import Link from 'next/link';
import { Suspense } from 'react';
import { LiveRefresh } from '@/app/components/live-refresh';
import { isoTime } from '@/app/components/time';
import { Badge, EmptyState, relative, Stat } from '@/app/components/ui';
import { requirePage } from '@/lib/auth/server';
import { deadAfterS, getWorkers, WORKERS_SHOWN, type WorkerView } from '@/lib/data/workers';
import WorkersSkeleton from './workers-skeleton';

export const dynamic = 'force-dynamic';
export const metadata: Metadata = { title: 'Workers' };

const th = 'wb-th';
const td = 'wb-td-top';
const link = 'wb-link';
const ORDER: Record<WorkerView['state'], number> = { alive: 0, silent: 1, stopped: 2 };

/** An age in seconds, to a tenth under a minute: how fresh "2s ago" really is. */
function age(seconds: number): string {
  if (seconds < 60) return `${Math.max(0, seconds).toFixed(1)} s`;
  return relative(0, seconds).replace(' ago', '');
}

export default async function WorkersPage() {
  await requirePage('/workers');
  return (
    <Suspense fallback={<WorkersSkeleton />}>
      <Workers />
    </Suspense>
  );
}

async function Workers() {
  const { workers: shown, more } = await getWorkers();
  const workers = shown.sort((a, b) => ORDER[a.state] - ORDER[b.state] || b.heartbeatAt - a.heartbeatAt);
  const now = Date.now() / 1000;
  const count = (state: WorkerView['state']) => workers.filter((w) => w.state === state).length;
  return (
    <div className="space-y-6">
      <div className="flex flex-wrap items-start justify-between gap-4">
        <div className="space-y-1">
          <h1 className="text-2xl font-semibold tracking-tight">Workers</h1>
          <p className="max-w-2xl text-sm text-zinc-600 dark:text-zinc-400">
            Processes that execute runs. Each heartbeats (every second by default); one silent for {deadAfterS()} s is
            taken for dead, and its runs are claimed by the others when their leases pass.
          </p>
        </div>
        <LiveRefresh />
      </div>

      {workers.length === 0 ? (
        <EmptyState title="No workers have registered">
          <p>Nothing executes queued runs until a worker runs against this database. Start one with</p>
          <pre className="mx-auto mt-3 w-fit rounded-md bg-zinc-900 px-3 py-2 text-left font-mono text-xs text-zinc-100 dark:bg-zinc-800">
            <code>npx waybill worker</code>
          </pre>
          <p className="mt-3">
            with the same <code className="font-mono text-xs">DATABASE_URL</code>;{' '}
            <code className="font-mono text-xs">--concurrency N</code> runs several at once. It stops cleanly on
            SIGTERM.
          </p>
        </EmptyState>
      ) : (
        <>
          <div className="grid grid-cols-3 gap-3 sm:max-w-lg">
            <Stat label="Alive" value={count('alive')} testId="workers-alive" />
            <Stat label="Silent" value={count('silent')} testId="workers-silent" />
            <Stat label="Stopped" value={count('stopped')} testId="workers-stopped" />
          </div>
          <div
            role="region"
            aria-label="Workers"
            tabIndex={0}
            className="overflow-x-auto rounded-lg border border-zinc-200 bg-white shadow-sm focus-visible:outline-2 focus-visible:outline-blue-600 dark:border-zinc-800 dark:bg-zinc-900"
          >
            <table data-testid="workers-table" className="w-full min-w-[58rem] text-sm">
              <caption className="sr-only">Workers, alive first</caption>
              <thead className="border-b border-zinc-200 bg-zinc-50 dark:border-zinc-800 dark:bg-zinc-900/60">
                <tr>
                  <th scope="col" className={th}>
                    Worker
                  </th>
                  <th scope="col" className={th}>
                    State
                  </th>
                  <th scope="col" className={th}>
                    Last heartbeat
                  </th>
                  <th scope="col" className={th}>
                    Slots
                  </th>
                  <th scope="col" className={th}>
                    Runs held
                  </th>
                  <th scope="col" className={th}>
                    Serves
                  </th>
                  <th scope="col" className={th}>
                    Host
                  </th>
                  <th scope="col" className={`${th} text-right`}>
                    PID
                  </th>
                  <th scope="col" className={th}>
                    Started
                  </th>
                </tr>
              </thead>
              <tbody className="divide-y divide-zinc-200 dark:divide-zinc-800">
                {workers.map((w) => (
                  <WorkerTableRow key={w.id} worker={w} now={now} />
                ))}
              </tbody>
            </table>
          </div>
          {more ? (
            <p data-testid="workers-more" className="text-sm text-zinc-600 dark:text-zinc-400">
              The first {WORKERS_SHOWN} are shown, live ones first, then the most recently started. A stopped
              worker&apos;s row is deleted once it has been stopped for{' '}
              <code className="font-mono text-xs">WAYBILL_WORKER_RETENTION</code> (a day by default).
            </p>
          ) : null}
        </>
      )}
    </div>
  );
}

function WorkerTableRow({ worker: w, now }: { worker: WorkerView; now: number }) {
  const iso = isoTime;
  return (
    <tr
      data-testid={`worker-row-${w.id}`}
      className={w.state === 'stopped' ? 'text-zinc-500 dark:text-zinc-400' : undefined}
    >
      <td className={`${td} min-w-32 max-w-64 font-mono text-xs leading-5 [overflow-wrap:anywhere]`}>{w.id}</td>
      <td className={td}>
        <Badge value={w.state} testId={`worker-state-${w.id}`} />
      </td>
      <td className={`${td} whitespace-nowrap`}>
        <time dateTime={iso(w.heartbeatAt)} title={iso(w.heartbeatAt)}>
          {relative(w.heartbeatAt, now)}
        </time>
        <div
          className={`text-xs tabular-nums ${w.state === 'silent' ? 'text-red-700 dark:text-red-300' : 'text-zinc-500 dark:text-zinc-400'}`}
        >
          {w.state === 'stopped' && w.stoppedAt !== null
            ? `stopped ${relative(w.stoppedAt, now)}`
            : w.state === 'silent'
              ? `silent for ${age(w.heartbeatAge)}: dead after ${deadAfterS()} s`
              : `age ${age(w.heartbeatAge)}`}
        </div>
      </td>
      <td className={`${td} whitespace-nowrap tabular-nums`}>
        <span data-testid={`worker-slots-${w.id}`}>
          {w.runs.length} of {w.capacity} busy
        </span>
        {w.slots === null ? (
          <div className="text-xs text-zinc-500 dark:text-zinc-400">slots not recorded: counted as 1</div>
        ) : null}
      </td>
      <td className={`${td} min-w-48`}>
        {w.runs.length === 0 ? (
          <span className="text-zinc-500 dark:text-zinc-400">none</span>
        ) : (
          <ul className="flex flex-wrap gap-x-3 gap-y-1">
            {w.runs.map((id) => (
              <li key={id} className="max-w-64 [overflow-wrap:anywhere]">
                <Link prefetch={false} href={`/runs/${encodeURIComponent(id)}`} className={link}>
                  {id}
                </Link>
              </li>
            ))}
          </ul>
        )}
      </td>
      <td className={`${td} min-w-40 max-w-64`} data-testid={`worker-serves-${w.id}`}>
        {w.workflows.length === 0 ? (
          <span className="text-zinc-500 dark:text-zinc-400">{w.state === 'alive' ? 'nothing published' : '—'}</span>
        ) : (
          <ul className="flex flex-wrap gap-x-2 gap-y-1 font-mono text-xs">
            {w.workflows.map((name) => (
              <li key={name} className="[overflow-wrap:anywhere]">
                {name}
              </li>
            ))}
          </ul>
        )}
      </td>
      <td className={`${td} max-w-48 [overflow-wrap:anywhere]`}>{w.host}</td>
      <td className={`${td} text-right tabular-nums`}>{w.pid}</td>
      <td className={`${td} whitespace-nowrap`}>
        <time dateTime={iso(w.startedAt)} title={iso(w.startedAt)}>
          {relative(w.startedAt, now)}
        </time>
      </td>
    </tr>
  );
}
