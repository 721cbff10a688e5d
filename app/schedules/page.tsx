/**
 * Schedules: each workflow started on a cron expression, with its next fire time and its last runs, and the
 * operator's pause and resume. lib/control/schedules is the one reader, as for the API and the CLI.
 */
import type { Metadata } from 'next';
import Link from 'next/link';
import { LiveRefresh } from '@/app/components/live-refresh';
import { isoTime } from '@/app/components/time';
import { Badge, EmptyState, relative } from '@/app/components/ui';
import { allows } from '@/lib/auth/principal';
import { requirePage } from '@/lib/auth/server';
import { config } from '@/lib/config';
import { schedules } from '@/lib/control';
import { callerOf, controlDeps } from '@/lib/data/control';
import { getWorkflowChoices } from '@/lib/data/workflows';
import { ScheduleAddForm } from './schedule-add-form';
import { ScheduleDelete } from './schedule-delete';
import { ScheduleToggle } from './schedule-toggle';

export const dynamic = 'force-dynamic';
export const metadata: Metadata = { title: 'Schedules' };

const th = 'wb-th';
const td = 'wb-td-top';
const link = 'wb-link';

export default async function SchedulesPage() {
  const who = await requirePage('/schedules');
  const caller = callerOf(who, 'dashboard');
  const operator = allows(who, 'operator');
  const [rows, choices] = await Promise.all([
    schedules.list(controlDeps(), caller),
    operator ? getWorkflowChoices() : Promise.resolve([]),
  ]);
  const now = Date.now() / 1000;
  return (
    <div className="space-y-6">
      <div className="flex flex-wrap items-start justify-between gap-4">
        <div className="space-y-1">
          <h1 className="text-2xl font-semibold tracking-tight">Schedules</h1>
          <p className="max-w-2xl text-sm text-zinc-600 dark:text-zinc-400">
            Workflows started on a cron expression. Each tick starts one run, named after the schedule and the tick,
            however many workers run.
          </p>
        </div>
        <LiveRefresh />
      </div>
      {operator && (
        <ScheduleAddForm workflows={choices.map((w) => w.name)} maxInputBytes={config().WAYBILL_MAX_BODY_BYTES} />
      )}
      {rows.length === 0 ? (
        <EmptyState title="No schedules">
          <p>Declare one in a workflow&apos;s definition, add one above, or add one with</p>
          <pre className="mx-auto mt-3 w-fit rounded-md bg-zinc-900 px-3 py-2 text-left font-mono text-xs text-zinc-100 dark:bg-zinc-800">
            <code>npx waybill schedule add nightly notify --cron &apos;0 0 2 * * *&apos; --tz Europe/Berlin</code>
          </pre>
        </EmptyState>
      ) : (
        <div
          role="region"
          aria-label="Schedules"
          tabIndex={0}
          className="overflow-x-auto rounded-lg border border-zinc-200 bg-white shadow-sm focus-visible:outline-2 focus-visible:outline-blue-600 dark:border-zinc-800 dark:bg-zinc-900"
        >
          <table className="w-full text-sm">
            <thead className="border-b border-zinc-200 dark:border-zinc-800">
              <tr>
                <th className={th}>Schedule</th>
                <th className={th}>Workflow</th>
                <th className={th}>Cron</th>
                <th className={th}>Next fire</th>
                <th className={th}>Last runs</th>
                <th className={th}>Policies</th>
                {operator && <th className={th}>Action</th>}
              </tr>
            </thead>
            <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
              {rows.map((s) => (
                <tr key={s.name} data-testid={`schedule-${s.name}`}>
                  <td className={td}>
                    <div className="font-medium">{s.name}</div>
                    <div className="text-xs text-zinc-500">
                      {s.source === 'definition' ? 'declared in code' : 'added by an operator'}
                    </div>
                  </td>
                  <td className={td}>{s.workflow}</td>
                  <td className={td}>
                    <code className="font-mono text-xs">{s.cron}</code>
                    <div className="text-xs text-zinc-500">{s.timeZone}</div>
                  </td>
                  <td className={td} data-testid={`schedule-next-${s.name}`}>
                    {s.nextFireAt === null ? (
                      <Badge value={s.finished ? 'finished' : 'paused'} />
                    ) : (
                      <time dateTime={isoTime(s.nextFireAt)} title={isoTime(s.nextFireAt)}>
                        {s.nextFireAt > now ? relative(s.nextFireAt, now) : 'due'}
                      </time>
                    )}
                  </td>
                  <td className={td}>
                    {s.lastRuns.length === 0 ? (
                      <span className="text-zinc-500">none yet</span>
                    ) : (
                      <ul className="space-y-1">
                        {s.lastRuns.map((r) => (
                          <li key={r.id} className="flex items-center gap-2">
                            <Link href={`/runs/${encodeURIComponent(r.id)}`} prefetch={false} className={link}>
                              {r.id.slice(s.name.length + 1)}
                            </Link>
                            <Badge value={r.status} />
                          </li>
                        ))}
                      </ul>
                    )}
                  </td>
                  <td className={`${td} text-xs text-zinc-600 dark:text-zinc-400`}>
                    overlap {s.overlap}
                    <br />
                    catch-up {s.catchUp}
                    {s.catchUp === 'all' ? ` (≤ ${s.catchUpCap})` : ''}
                  </td>
                  {operator && (
                    <td className={td}>
                      <div className="flex flex-wrap items-start gap-2">
                        <ScheduleToggle name={s.name} paused={s.paused} />
                        <ScheduleDelete name={s.name} declared={s.source === 'definition'} />
                      </div>
                    </td>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}
