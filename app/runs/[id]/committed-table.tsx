/**
 * A run's committed results, searchable by key. The search is a plain GET form (`?q=`), so a search is a
 * link one can share, and it works before any JavaScript has loaded.
 */
import Form from 'next/form';
import Link from 'next/link';
import { jsonParts } from '@/app/components/json-view';
import { isoTime } from '@/app/components/time';
import { buttonClass, EmptyState, relative } from '@/app/components/ui';
import { COMMITTED_PAGE as COMMITTED_LIMIT } from '@/lib/data/run-detail';
import type { CommittedRow } from '@/lib/store/contract';
import { CommittedRows, type CommittedRowView } from './committed-rows';

/**
 * `after`: the key the shown page starts after (a keyset cursor in the URL, `?after=`), so a 100,000-step
 * run is read a hundred rows at a time from an index, never counted through with an offset.
 */
export function CommittedTable({
  runId,
  rows,
  total,
  q,
  qError,
  now,
  after,
}: {
  runId: string;
  rows: CommittedRow[];
  total: number;
  q: string | undefined;
  qError: string | undefined;
  now: number;
  after?: string;
}) {
  const href = `/runs/${encodeURIComponent(runId)}`;
  const last = rows[rows.length - 1];
  const next =
    !q && last && rows.length >= COMMITTED_LIMIT ? `${href}?after=${encodeURIComponent(last.idemKey)}` : null;
  return (
    <section
      data-testid="committed-table"
      aria-labelledby="committed-title"
      className="min-w-0 rounded-lg border border-zinc-200 bg-white p-4 shadow-sm dark:border-zinc-800 dark:bg-zinc-900"
    >
      <div className="mb-3 flex flex-wrap items-end justify-between gap-3">
        <div>
          <h2 id="committed-title" className="text-sm font-semibold text-zinc-700 dark:text-zinc-300">
            Committed results
          </h2>
          <p data-testid="committed-count" className="mt-0.5 text-xs text-zinc-600 dark:text-zinc-400">
            {summary(rows.length, total, q, after)}
          </p>
          {(next || after) && (
            <nav aria-label="Committed pages" className="mt-1 flex gap-3 text-xs">
              {after && (
                <Link
                  prefetch={false}
                  href={href}
                  data-testid="committed-first"
                  className="text-blue-700 hover:underline dark:text-blue-400"
                >
                  « First
                </Link>
              )}
              {next && (
                <Link
                  prefetch={false}
                  href={next}
                  data-testid="committed-next"
                  className="text-blue-700 hover:underline dark:text-blue-400"
                >
                  Next {COMMITTED_LIMIT} »
                </Link>
              )}
            </nav>
          )}
        </div>
        <Form action={href} className="flex w-full items-end gap-2 sm:w-auto" role="search">
          <div className="flex-1 sm:w-64 sm:flex-none">
            <label htmlFor="committed-search" className="block text-xs font-medium text-zinc-700 dark:text-zinc-300">
              Search by key
            </label>
            <input
              id="committed-search"
              name="q"
              type="search"
              defaultValue={q ?? ''}
              maxLength={200}
              data-testid="committed-search"
              placeholder="e.g. step:12"
              aria-invalid={qError ? true : undefined}
              aria-describedby={qError ? 'committed-search-error' : undefined}
              className="mt-1 block w-full rounded-md border border-zinc-300 bg-white px-2.5 py-1.5 text-sm focus-visible:outline-2 focus-visible:outline-blue-600 dark:border-zinc-700 dark:bg-zinc-950"
            />
          </div>
          <button type="submit" className={buttonClass()}>
            Search
          </button>
          {q && (
            <Link prefetch={false} href={href} className={buttonClass()} data-testid="committed-clear">
              Clear
            </Link>
          )}
        </Form>
      </div>
      {qError && (
        <p
          id="committed-search-error"
          data-testid="field-error-q"
          className="mb-3 text-sm text-red-700 dark:text-red-400"
        >
          {qError}
        </p>
      )}
      {rows.length === 0 ? (
        <EmptyState title={q ? `No committed key contains “${q}”` : 'Nothing committed yet'}>
          {q ? 'Try a shorter part of the key.' : 'Each step’s result appears here once its commit transaction lands.'}
        </EmptyState>
      ) : (
        // A table from a tablet up; on a phone each row stacks into a small card, each cell labelled by its header.
        <table className="block w-full text-left text-sm sm:table sm:table-fixed">
          <caption className="sr-only">Committed results of run {runId}</caption>
          <thead className="hidden border-b border-zinc-200 text-xs text-zinc-600 sm:table-header-group dark:border-zinc-800 dark:text-zinc-400">
            <tr>
              <th scope="col" className="w-12 py-2 pr-3 font-medium">
                Step
              </th>
              <th scope="col" className="w-[18%] py-2 pr-3 font-medium">
                Key
              </th>
              <th scope="col" className="w-20 py-2 pr-3 font-medium">
                Source
              </th>
              <th scope="col" className="w-[12%] py-2 pr-3 font-medium">
                Worker
              </th>
              <th scope="col" className="w-20 py-2 pr-3 text-right font-medium">
                Duration
              </th>
              <th scope="col" className="w-24 py-2 pr-3 font-medium">
                Committed
              </th>
              <th scope="col" className="py-2 font-medium">
                Result
              </th>
            </tr>
          </thead>
          <CommittedRows runId={runId} rows={rows.map((row) => rowView(row, now))} />
        </table>
      )}
    </section>
  );
}

/** What a row shows, nothing more: the result pretty-printed and cut here, times already in words. */
function rowView(row: CommittedRow, now: number): CommittedRowView {
  return {
    key: row.idemKey,
    step: row.step,
    manual: row.source === 'manual',
    forked: row.source === 'forked',
    workerId: row.workerId,
    durationMs: row.durationMs === null ? null : Math.round(row.durationMs),
    iso: isoTime(row.committedAt),
    ago: relative(row.committedAt, now),
    result: jsonParts(row.resultJson),
  };
}

function summary(shown: number, total: number, q: string | undefined, after?: string): string {
  if (after && !q) return `${shown} of ${total} committed, after ${after}`;
  if (q)
    return shown >= COMMITTED_LIMIT
      ? `showing the first ${COMMITTED_LIMIT} keys containing “${q}” (of ${total} committed)`
      : `${shown} of ${total} committed keys contain “${q}”`;
  if (total > shown) return `showing first ${shown} of ${total}`;
  return `${total} committed`;
}
