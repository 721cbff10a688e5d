'use client';
/**
 * The committed table's rows. A client component fed one small object a row (the result already cut and
 * pretty-printed on the server), not server-rendered rows: fifty rows of a dozen elements each made the RSC
 * payload carry every element tree besides the HTML (1.6 KiB a row), where their data is a few hundred bytes.
 * Text only, like everything that shows stored values.
 */
import Link from 'next/link';
import { type JsonParts, JsonPartsView } from '@/app/components/json-view';

export interface CommittedRowView {
  key: string;
  step: number | null;
  manual: boolean;
  /** Copied from another run by a fork. */
  forked?: boolean;
  workerId: string | null;
  durationMs: number | null;
  iso: string;
  /** "3m ago", by the server's clock, so the HTML and hydration agree. */
  ago: string;
  result: JsonParts;
}

/** A cell: in the table from `sm` up; on a phone a labelled block (the label is its header's text). Defined in globals.css. */
const cell = 'wb-cell';

export function CommittedRows({ rows, runId }: { rows: CommittedRowView[]; runId: string }) {
  return (
    <tbody className="block divide-y divide-zinc-100 sm:table-row-group dark:divide-zinc-800">
      {rows.map((row) => (
        <tr key={row.key} data-testid="committed-row" className="wb-committed-row">
          <td data-label="Step" className={`${cell} text-xs font-medium tabular-nums`}>
            {/* The step's permalink: every attempt, the result with a copy button, and what a rerun replaced. */}
            {row.step === null ? (
              '—'
            ) : (
              <Link
                prefetch={false}
                data-testid="step-link"
                href={`/runs/${encodeURIComponent(runId)}/steps/${row.step}`}
                className="text-blue-700 hover:underline dark:text-blue-400"
              >
                {row.step}
              </Link>
            )}
          </td>
          <td data-label="Key" className={`${cell} col-span-3 row-start-1 break-all font-mono text-xs`}>
            {row.key}
          </td>
          <td data-label="Source" className={`${cell} text-xs`}>
            {row.manual ? (
              <span
                data-testid="source-manual"
                title="resolved by hand by an operator"
                className="wb-badge wb-tone-violet"
              >
                manual
              </span>
            ) : row.forked ? (
              <span
                data-testid="source-forked"
                title="copied from the original run by a fork"
                className="wb-badge wb-tone-violet"
              >
                forked
              </span>
            ) : (
              <span className="wb-soft">executed</span>
            )}
          </td>
          <td data-label="Worker" className={`${cell} break-all text-xs wb-body`}>
            {row.workerId ?? '—'}
          </td>
          <td data-label="Duration" className={`${cell} text-xs tabular-nums sm:text-right`}>
            {row.durationMs === null ? '—' : `${row.durationMs} ms`}
          </td>
          <td data-label="Committed" className={`${cell} text-xs wb-soft`}>
            <time dateTime={row.iso} title={row.iso}>
              {row.ago}
            </time>
          </td>
          <td data-label="Result" className={`${cell} col-span-3 min-w-0 sm:pr-0`}>
            <JsonPartsView parts={row.result} label={`result of ${row.key}`} />
          </td>
        </tr>
      ))}
    </tbody>
  );
}
