/**
 * Alert webhooks: the subscriptions (URL, events, paused or not) with the operator's pause and resume, and the
 * newest deliveries with their attempts and last error, failures first in mind: each can be re-sent.
 * lib/control/webhooks is the one reader, as for the API and the CLI.
 */
import type { Metadata } from 'next';
import Link from 'next/link';
import { LiveRefresh } from '@/app/components/live-refresh';
import { isoTime } from '@/app/components/time';
import { Badge, EmptyState, relative } from '@/app/components/ui';
import { allows } from '@/lib/auth/principal';
import { requirePage } from '@/lib/auth/server';
import { webhooks } from '@/lib/control';
import { callerOf, controlDeps } from '@/lib/data/control';
import { WEBHOOK_EVENTS } from '@/lib/store/contract';
import { WebhookAddForm } from './webhook-add-form';
import { ResendButton, WebhookToggle } from './webhook-buttons';
import { WebhookDelete } from './webhook-delete';

export const dynamic = 'force-dynamic';
export const metadata: Metadata = { title: 'Webhooks' };

const th = 'wb-th';
const td = 'wb-td-top';
const link = 'wb-link';
const region =
  'overflow-x-auto rounded-lg border border-zinc-200 bg-white shadow-sm focus-visible:outline-2 focus-visible:outline-blue-600 dark:border-zinc-800 dark:bg-zinc-900';

export default async function WebhooksPage() {
  const who = await requirePage('/webhooks');
  const caller = callerOf(who, 'dashboard');
  const [hooks, deliveries] = await Promise.all([
    webhooks.list(controlDeps(), caller),
    webhooks.deliveries(controlDeps(), caller, { limit: 100 }),
  ]);
  const operator = allows(who, 'operator');
  const now = Date.now() / 1000;
  const failed = deliveries.filter((d) => d.status === 'failed').length;
  return (
    <div className="space-y-6">
      <div className="flex flex-wrap items-start justify-between gap-4">
        <div className="space-y-1">
          <h1 className="text-2xl font-semibold tracking-tight">Webhooks</h1>
          <p className="max-w-2xl text-sm text-zinc-600 dark:text-zinc-400">
            Signed POSTs of run events to the URLs subscribed, from an outbox in the store: each delivery is retried
            with backoff until its receiver answers 2xx, and carries an id to deduplicate on.
          </p>
        </div>
        <LiveRefresh />
      </div>
      {operator && <WebhookAddForm events={WEBHOOK_EVENTS} />}
      {hooks.length === 0 ? (
        <EmptyState title="No webhooks">
          <p>Subscribe a URL above, or with</p>
          <pre className="mx-auto mt-3 w-fit rounded-md bg-zinc-900 px-3 py-2 text-left font-mono text-xs text-zinc-100 dark:bg-zinc-800">
            <code>npx waybill webhook add https://ops.example.com/hooks --event run.failed</code>
          </pre>
        </EmptyState>
      ) : (
        <div role="region" aria-label="Webhooks" tabIndex={0} className={region}>
          <table className="w-full text-sm">
            <thead className="border-b border-zinc-200 dark:border-zinc-800">
              <tr>
                <th className={th}>Webhook</th>
                <th className={th}>Events</th>
                <th className={th}>State</th>
                {operator && <th className={th}>Action</th>}
              </tr>
            </thead>
            <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
              {hooks.map((w) => (
                <tr key={w.id} data-testid={`webhook-${w.id}`}>
                  <td className={td}>
                    <div className="font-mono text-xs">{w.url}</div>
                    <div className="text-xs text-zinc-500">
                      {w.id} · secret {w.secretHint}
                    </div>
                  </td>
                  <td className={`${td} font-mono text-xs`}>{w.events.join(', ')}</td>
                  <td className={td} data-testid={`webhook-state-${w.id}`}>
                    <Badge value={w.paused ? 'paused' : 'active'} />
                  </td>
                  {operator && (
                    <td className={td}>
                      <div className="flex flex-wrap items-start gap-2">
                        <WebhookToggle id={w.id} paused={w.paused} />
                        <WebhookDelete id={w.id} url={w.url} />
                      </div>
                    </td>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <section className="space-y-2">
        <h2 className="text-lg font-semibold">
          Deliveries{' '}
          <span className="text-sm font-normal text-zinc-500" data-testid="deliveries-failed">
            {failed} failed of the newest {deliveries.length}
          </span>
        </h2>
        {deliveries.length === 0 ? (
          <p className="text-sm text-zinc-500">No deliveries yet.</p>
        ) : (
          <div role="region" aria-label="Deliveries" tabIndex={0} className={region}>
            <table className="w-full text-sm">
              <thead className="border-b border-zinc-200 dark:border-zinc-800">
                <tr>
                  <th className={th}>Event</th>
                  <th className={th}>Run</th>
                  <th className={th}>Status</th>
                  <th className={th}>Attempts</th>
                  <th className={th}>Last answer</th>
                  <th className={th}>Created</th>
                  {operator && <th className={th}>Action</th>}
                </tr>
              </thead>
              <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
                {deliveries.map((d) => (
                  <tr key={d.id} data-testid={`delivery-${d.id}`}>
                    <td className={td}>
                      <div className="font-mono text-xs">{d.event}</div>
                      <div className="break-all text-xs text-zinc-500">{d.id}</div>
                    </td>
                    <td className={td}>
                      {d.runId ? (
                        <Link href={`/runs/${encodeURIComponent(d.runId)}`} prefetch={false} className={link}>
                          {d.runId}
                        </Link>
                      ) : (
                        '—'
                      )}
                    </td>
                    <td className={td} data-testid={`delivery-status-${d.id}`}>
                      <Badge value={d.status} />
                      {d.nextAttemptAt !== null && (
                        <div className="text-xs text-zinc-500">
                          next{' '}
                          <time dateTime={isoTime(d.nextAttemptAt)}>
                            {d.nextAttemptAt > now ? relative(d.nextAttemptAt, now) : 'now'}
                          </time>
                        </div>
                      )}
                    </td>
                    <td className={td}>{d.attempts}</td>
                    <td className={`${td} text-xs`}>
                      {d.lastError ?? (d.lastStatus === null ? '—' : `HTTP ${d.lastStatus}`)}
                    </td>
                    <td className={`${td} text-xs`}>
                      <time dateTime={isoTime(d.createdAt)} title={isoTime(d.createdAt)}>
                        {relative(d.createdAt, now)}
                      </time>
                    </td>
                    {operator && (
                      <td className={td}>{(d.status !== 'pending' || d.attempts > 0) && <ResendButton id={d.id} />}</td>
                    )}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
    </div>
  );
}
