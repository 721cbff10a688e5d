/**
 * The runs page's "waiting for approval" line: how many runs wait for a person, and the one that has waited
 * longest — its run, the wait's name, since when — linked to its run page, where it is decided. Shown only
 * when some run waits for approval: an approval nobody sees is a run that never finishes.
 */
import Link from 'next/link';
import type { WaitingKind } from '@/lib/store/contract';
import { runHref, runsHref } from './runs-query';
import { isoTime } from './time';

export function WaitingBanner({ waiting, now }: { waiting: WaitingKind[]; now: number }) {
  const approvals = waiting.find((w) => w.kind === 'approval');
  if (!approvals || approvals.runs === 0) return null;
  const since = isoTime(approvals.oldestAt);
  return (
    <div
      data-testid="waiting-approvals"
      role="status"
      className="rounded-md bg-amber-50 px-3 py-2 text-sm text-amber-900 dark:bg-amber-950 dark:text-amber-200"
    >
      <p>
        <strong data-testid="waiting-approvals-count">{approvals.runs.toLocaleString('en-US')}</strong>{' '}
        {approvals.runs === 1 ? 'run waits' : 'runs wait'} for approval.{' '}
        <Link
          prefetch={false}
          href={runsHref({ waiting: 'approval' })}
          data-testid="waiting-approvals-list"
          className="font-medium underline"
        >
          Show {approvals.runs === 1 ? 'it' : 'them'}
        </Link>
      </p>
      <p data-testid="waiting-oldest" className="mt-0.5">
        {approvals.runs === 1 ? 'It' : 'The oldest'}:{' '}
        <Link
          prefetch={false}
          href={runHref(approvals.oldestRunId)}
          data-testid="waiting-oldest-link"
          className="break-all font-mono font-medium underline"
        >
          {approvals.oldestRunId}
        </Link>{' '}
        at its wait{' '}
        <code data-testid="waiting-oldest-name" className="font-mono">
          {approvals.oldestName}
        </code>
        , since{' '}
        <time dateTime={since} title={since} data-testid="waiting-oldest-since">
          {clockTime(approvals.oldestAt, now)}
        </time>{' '}
        (<span data-testid="waiting-oldest-age">{age(approvals.ageSeconds)}</span>).
      </p>
    </div>
  );
}

/** "14:03 UTC" today, else "2026-11-30 14:03 UTC": the server renders it, so it is said in UTC. */
function clockTime(epochSeconds: number, nowSeconds: number): string {
  const iso = isoTime(epochSeconds);
  if (!iso.includes('T')) return iso;
  const [day, time] = iso.split('T') as [string, string];
  const today = isoTime(nowSeconds).split('T')[0];
  return `${day === today ? '' : `${day} `}${time.slice(0, 5)} UTC`;
}

function age(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  return s < 60
    ? `${s}s`
    : s < 3600
      ? `${Math.round(s / 60)} min`
      : s < 86400
        ? `${Math.round(s / 3600)} h`
        : `${Math.round(s / 86400)} d`;
}
