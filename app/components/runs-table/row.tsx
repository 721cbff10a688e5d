/** One run in the list: its link, status with why it is stalled or queued, progress, counters, worker, time. */
import Link from 'next/link';
import type { RunFigures } from '@/lib/control/figures';
import type { RunSummary, RunTags } from '@/lib/store/contract';
import { Badge, ProgressBar } from '../ui';
import { check, td } from './bulk-actions';

/** What a row shows, and no more: its props are sent to the browser with the page. */
export interface RunsTableRow
  extends Pick<RunSummary, 'id' | 'workflow' | 'status' | 'orphanedClaims' | 'owner' | 'error'> {
  /** "12s ago", computed on the server so the client renders what the server did. */
  updatedLabel: string;
  updatedTitle: string;
  /** What a queued run waits for (lib/control/queued.ts), or null. */
  queuedReason: string | null;
  /** Why it is stalled (lib/control/stalled.ts), or null. */
  stallMessage: string | null;
  /** Its progress, executed, skipped… (lib/control/figures.ts): what the row shows of them. */
  figures: Omit<RunFigures, 'committed'>;
  /** Its tags and metadata, shown under its id. */
  tags: RunTags;
}

/** `onSelect`: the row's checkbox, for an operator; a viewer's rows have none. */
export function RunRow({
  run,
  selected,
  onSelect,
}: {
  run: RunsTableRow;
  selected: boolean;
  onSelect: ((on: boolean) => void) | null;
}) {
  return (
    <tr data-testid={`run-row-${run.id}`} aria-selected={selected} className={selected ? 'wb-row-selected' : 'wb-row'}>
      {onSelect && (
        <td className={td}>
          <input
            type="checkbox"
            data-testid={`select-${run.id}`}
            aria-label={`Select run ${run.id}`}
            checked={selected}
            onChange={(event) => onSelect(event.target.checked)}
            className={check}
          />
        </td>
      )}
      <td className={td}>
        <Link
          prefetch={false}
          href={`/runs/${encodeURIComponent(run.id)}`}
          title={run.id}
          data-testid={`run-link-${run.id}`}
          className="wb-run-link"
        >
          {run.id}
        </Link>
        <RunTagChips tags={run.tags} />
      </td>
      <td className={td}>
        <RunState run={run} />
      </td>
      <td className={`${td} wb-td-text wb-body`}>{run.workflow}</td>
      <td className={`${td} w-56`}>
        <ProgressBar figures={run.figures} label={`Progress of ${run.id}`} />
      </td>
      <td
        className={`${td} wb-td-num wb-body`}
        title={`executed ${run.figures.executed}, skipped ${run.figures.skipped}, awaited ${run.figures.awaited}`}
      >
        {`${run.figures.executed} / ${run.figures.skipped} / ${run.figures.awaited}`}
      </td>
      <td className={`${td} wb-td-num`} data-testid={`run-orphaned-${run.id}`}>
        {run.orphanedClaims > 0 ? (
          <span className="wb-badge wb-tone-orange font-semibold">{run.orphanedClaims}</span>
        ) : (
          <span className="wb-dim">0</span>
        )}
      </td>
      <td className={`${td} wb-td-owner`} title={run.owner ?? undefined}>
        {run.owner ?? <span className="wb-dim">—</span>}
      </td>
      <td className={`${td} wb-td-num text-xs wb-soft`}>
        <time dateTime={run.updatedTitle} title={run.updatedTitle}>
          {run.updatedLabel}
        </time>
      </td>
    </tr>
  );
}

/** The status cell: the badge, a stalled badge and its reason, what a queued run waits for, the error. */
function RunState({ run }: { run: RunsTableRow }) {
  return (
    <>
      <Badge value={run.status} testId={`run-status-${run.id}`} />
      {/* The reason is the badge's title only where no line under it says it (a queued run says what it waits for). */}
      {run.stallMessage && (
        <span
          className="wb-badge wb-tone-orange ml-1"
          data-testid={`run-stalled-${run.id}`}
          title={run.status === 'queued' ? run.stallMessage : undefined}
        >
          stalled
        </span>
      )}
      {run.stallMessage && run.status !== 'queued' && (
        <p className="wb-row-note wb-warn" data-testid={`run-stall-${run.id}`}>
          {run.stallMessage}
        </p>
      )}
      {run.queuedReason && (
        <p
          className={`wb-row-note ${run.stallMessage ? 'wb-warn' : 'wb-dim'}`}
          data-testid={`run-queued-reason-${run.id}`}
        >
          {run.queuedReason}
        </p>
      )}
      {run.error && (
        <p className="wb-row-note truncate text-red-700 dark:text-red-400" title={run.error}>
          {run.error}
        </p>
      )}
    </>
  );
}

/** A run's tags and metadata under its id, small; the run page has them in full, each a link. */
function RunTagChips({ tags }: { tags: RunTags }) {
  const pairs = Object.entries(tags.metadata);
  if (tags.tags.length === 0 && pairs.length === 0) return null;
  return (
    <div data-testid="run-row-tags" className="wb-chips">
      {tags.tags.map((tag) => (
        <span key={tag} className="wb-chip">
          {tag}
        </span>
      ))}
      {pairs.map(([key, value]) => (
        <span key={key} className="wb-chip">{`${key}=${value}`}</span>
      ))}
    </div>
  );
}
