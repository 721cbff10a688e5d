/**
 * The operators' log: every operator action, from the dashboard, the API or the CLI (lib/control writes them
 * all), newest first, with who made it and as what role. Keyset pages by id (`?before=`), so a page does not shift while new lines arrive.
 */
import type { Metadata } from 'next';
import Link from 'next/link';
import { z } from 'zod';
import { Badge, EmptyState, buttonClass, relative } from '@/app/components/ui';
import { requirePage } from '@/lib/auth/server';
import { audit } from '@/lib/control';
import { callerOf, controlDeps } from '@/lib/data/control';
import type { AuditEntry } from '@/lib/store/types';
import { isoTime } from '@/app/components/time';

export const dynamic = 'force-dynamic';
export const metadata: Metadata = { title: 'Audit' };

const AUDIT_PAGE_SIZE = 50;

const th = 'px-3 py-2 text-left text-xs font-medium uppercase tracking-wide text-zinc-500 dark:text-zinc-400';
const td = 'px-3 py-2 align-top';
const link =
  'rounded text-blue-700 underline-offset-2 hover:underline focus-visible:outline-2 focus-visible:outline-offset-1 focus-visible:outline-blue-600 dark:text-blue-400';

/** A cursor from a URL anyone can edit: a positive integer, or none (the newest page). */
const beforeSchema = z.coerce.number().int().positive().max(Number.MAX_SAFE_INTEGER).optional().catch(undefined);

export default async function AuditPage({
  searchParams,
}: {
  searchParams: Promise<Record<string, string | string[] | undefined>>;
}) {
  const who = await requirePage('/audit');
  const raw = (await searchParams).before;
  const before = beforeSchema.parse(Array.isArray(raw) ? raw[0] : raw);
  const { entries: page, next } = await audit.list(controlDeps(), callerOf(who, 'dashboard'), {
    limit: AUDIT_PAGE_SIZE,
    before,
  });
  const now = Date.now() / 1000;

  return (
    <div className="space-y-6">
      <header>
        <h1 className="text-2xl font-semibold tracking-tight">Audit</h1>
        <p className="mt-1 max-w-2xl text-sm text-zinc-600 dark:text-zinc-400">
          Every run started, paused, resumed, cancelled or retried, every claim expired, resolved or swept, and every
          prune, with who did it: from this dashboard, the API or the <code>waybill</code> CLI. Newest first.
        </p>
      </header>
      {page.length === 0 ? (
        <div data-testid="audit-empty">
          <EmptyState title={before ? 'No older entries' : 'Nothing recorded yet'}>
            {before ? (
              <Link href="/audit" className={buttonClass()}>
                Back to the newest
              </Link>
            ) : (
              'Operators’ actions appear here as they are made.'
            )}
          </EmptyState>
        </div>
      ) : (
        <div
          role="region"
          aria-label="Audit log"
          tabIndex={0}
          className="overflow-x-auto rounded-lg border border-zinc-200 bg-white shadow-sm focus-visible:outline-2 focus-visible:outline-blue-600 dark:border-zinc-800 dark:bg-zinc-900"
        >
          <table data-testid="audit-table" className="w-full min-w-[56rem] text-sm">
            <caption className="sr-only">Operators’ actions, newest first</caption>
            <thead className="border-b border-zinc-200 bg-zinc-50 dark:border-zinc-800 dark:bg-zinc-900/60">
              <tr>
                <th scope="col" className={th}>
                  When
                </th>
                <th scope="col" className={th}>
                  Who
                </th>
                <th scope="col" className={th}>
                  Role
                </th>
                <th scope="col" className={th}>
                  Action
                </th>
                <th scope="col" className={th}>
                  Target
                </th>
                <th scope="col" className={th}>
                  Detail
                </th>
              </tr>
            </thead>
            <tbody className="divide-y divide-zinc-200 dark:divide-zinc-800">
              {page.map((entry) => (
                <AuditRow key={entry.id} entry={entry} now={now} />
              ))}
            </tbody>
          </table>
        </div>
      )}
      {(before || next) && (
        <nav aria-label="Pages" className="flex justify-end gap-2 text-sm">
          {before && (
            <Link href="/audit" data-testid="audit-newest" className={buttonClass()}>
              <span aria-hidden>«</span> Newest
            </Link>
          )}
          {next && (
            <Link href={`/audit?before=${next}`} data-testid="audit-older" className={buttonClass()}>
              Older <span aria-hidden>»</span>
            </Link>
          )}
        </nav>
      )}
    </div>
  );
}

function AuditRow({ entry, now }: { entry: AuditEntry; now: number }) {
  const iso = isoTime(entry.at);
  return (
    <tr data-testid={`audit-row-${entry.id}`}>
      <td className={`${td} whitespace-nowrap`}>
        <time dateTime={iso} title={iso}>
          {relative(entry.at, now)}
        </time>
      </td>
      <td className={`${td} max-w-56 [overflow-wrap:anywhere]`} data-testid="audit-who">
        {entry.actor}
      </td>
      <td className={td}>
        <Badge value={entry.role} />
      </td>
      <td className={`${td} font-medium`} data-testid="audit-action">
        {entry.action}
      </td>
      <td className={`${td} max-w-72 font-mono text-xs [overflow-wrap:anywhere]`} data-testid="audit-target">
        {entry.runId ? (
          <Link href={`/runs/${encodeURIComponent(entry.runId)}`} className={link}>
            {entry.target}
          </Link>
        ) : (
          entry.target
        )}
        {entry.runId && entry.target !== entry.runId && (
          <div className="mt-0.5 font-sans text-zinc-500 dark:text-zinc-400">run {entry.runId}</div>
        )}
      </td>
      <td className={`${td} max-w-96 whitespace-pre-wrap break-words text-xs`} data-testid="audit-detail">
        {entry.detail ?? ''}
      </td>
    </tr>
  );
}
