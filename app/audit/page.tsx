/**
 * The operators' log: every operator action, from the dashboard, the API or the CLI (lib/control writes them
 * all), newest first, with who made it and as what role. Keyset pages by id (`?before=`), so a page does not shift while new lines arrive.
 */
import type { Metadata } from 'next';
import Link from 'next/link';
import { isoTime } from '@/app/components/time';
import { Badge, buttonClass, EmptyState, relative } from '@/app/components/ui';
import { auditQuery } from '@/lib/api/audit';
import { requirePage } from '@/lib/auth/server';
import { audit } from '@/lib/control';
import { AUDIT_ACTIONS, TIME_HINT } from '@/lib/control/audit';
import { callerOf, controlDeps } from '@/lib/data/control';
import { ControlInputError } from '@/lib/errors';
import type { AuditEntry } from '@/lib/store/contract';

export const dynamic = 'force-dynamic';
export const metadata: Metadata = { title: 'Audit' };

const AUDIT_PAGE_SIZE = 50;

const th = 'wb-th';
const td = 'px-3 py-2 align-top';
const link = 'wb-link';

const FILTERS = ['actor', 'action', 'runId', 'since', 'until'] as const;
type Filters = Partial<Record<(typeof FILTERS)[number], string>>;

/** The URL's filters and cursor as text, first value of each; anything else in the URL is ignored. */
function given(params: Record<string, string | string[] | undefined>): Filters & { before?: string } {
  const out: Filters & { before?: string } = {};
  for (const name of [...FILTERS, 'before'] as const) {
    const raw = params[name];
    const text = (Array.isArray(raw) ? raw[0] : raw)?.trim();
    if (text) out[name] = text;
  }
  return out;
}

/** `/audit?actor=…&before=…`: this page's address with the filters kept. */
function href(filters: Filters, before?: number): string {
  const query = new URLSearchParams(Object.entries(filters).filter(([, v]) => v) as [string, string][]);
  if (before !== undefined) query.set('before', String(before));
  const text = query.toString();
  return text ? `/audit?${text}` : '/audit';
}

export default async function AuditPage({
  searchParams,
}: {
  searchParams: Promise<Record<string, string | string[] | undefined>>;
}) {
  const who = await requirePage('/audit');
  const { before: beforeText, ...filters } = given(await searchParams);
  // The API's own query (GET /api/v1/audit): the same filters, limits and messages, read by lib/control.
  const parsed = auditQuery.safeParse({ ...filters, before: beforeText });
  const problems: string[] = parsed.success
    ? []
    : parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
  const before = parsed.success ? parsed.data.before : undefined;
  let listed: { entries: AuditEntry[]; next: number | null } = { entries: [], next: null };
  if (parsed.success) {
    try {
      listed = await audit.list(controlDeps(), callerOf(who, 'dashboard'), {
        ...parsed.data,
        limit: AUDIT_PAGE_SIZE,
      });
    } catch (error) {
      if (!(error instanceof ControlInputError)) throw error;
      for (const [field, messages] of Object.entries(error.fields))
        for (const m of messages) problems.push(`${field}: ${m}`);
    }
  }
  const { entries: page, next } = listed;
  const filtered = Object.keys(filters).length > 0;
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
      <AuditFilters filters={filters} problems={problems} />
      {page.length === 0 ? (
        <div data-testid="audit-empty">
          <EmptyState
            title={
              problems.length
                ? 'Fix the filter'
                : before
                  ? 'No older entries'
                  : filtered
                    ? 'No entry matches'
                    : 'Nothing recorded yet'
            }
          >
            {before || filtered ? (
              <Link href={before ? href(filters) : '/audit'} className={buttonClass()}>
                {before ? 'Back to the newest' : 'Clear the filters'}
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
            <Link href={href(filters)} data-testid="audit-newest" className={buttonClass()}>
              <span aria-hidden>«</span> Newest
            </Link>
          )}
          {next && (
            <Link href={href(filters, next)} data-testid="audit-older" className={buttonClass()}>
              Older <span aria-hidden>»</span>
            </Link>
          )}
        </nav>
      )}
    </div>
  );
}

const input =
  'rounded-md border border-zinc-300 bg-white px-2 py-1 text-sm dark:border-zinc-600 dark:bg-zinc-950 aria-invalid:border-red-600';

/** A plain GET form: the filters are the URL's, so a filtered view is a link to share. */
function AuditFilters({ filters, problems }: { filters: Filters; problems: string[] }) {
  const bad = (name: string) => problems.some((p) => p.startsWith(`${name}:`)) || undefined;
  return (
    <form method="get" action="/audit" data-testid="audit-filters" className="flex flex-wrap items-end gap-2 text-xs">
      <label className="flex flex-col gap-0.5">
        Who
        <input name="actor" data-testid="audit-filter-actor" defaultValue={filters.actor} className={input} />
      </label>
      <label className="flex flex-col gap-0.5">
        Action
        <select
          name="action"
          data-testid="audit-filter-action"
          defaultValue={filters.action ?? ''}
          className={input}
          aria-invalid={bad('action')}
        >
          <option value="">any</option>
          {AUDIT_ACTIONS.map((a) => (
            <option key={a} value={a}>
              {a}
            </option>
          ))}
        </select>
      </label>
      <label className="flex flex-col gap-0.5">
        Run
        <input name="runId" data-testid="audit-filter-run" defaultValue={filters.runId} className={input} />
      </label>
      <label className="flex flex-col gap-0.5">
        Since
        <input
          name="since"
          data-testid="audit-filter-since"
          defaultValue={filters.since}
          placeholder={TIME_HINT}
          className={input}
          aria-invalid={bad('since')}
        />
      </label>
      <label className="flex flex-col gap-0.5">
        Until
        <input
          name="until"
          data-testid="audit-filter-until"
          defaultValue={filters.until}
          placeholder={TIME_HINT}
          className={input}
          aria-invalid={bad('until')}
        />
      </label>
      <button type="submit" data-testid="audit-filter-apply" className={buttonClass('primary')}>
        Filter
      </button>
      {Object.keys(filters).length > 0 && (
        <Link href="/audit" data-testid="audit-filter-clear" className={buttonClass()}>
          Clear
        </Link>
      )}
      {problems.length > 0 && (
        <p role="alert" data-testid="audit-filter-error" className="w-full text-sm text-red-700 dark:text-red-400">
          {problems.join('; ')}
        </p>
      )}
    </form>
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
