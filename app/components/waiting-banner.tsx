/**
 * The runs page's "waiting for approval" line: how many runs wait for a person and how long the oldest has,
 * with a link to the waiting runs (the `waiting` status filter). Shown only when some run waits for approval:
 * an approval nobody sees is a run that never finishes.
 */
import Link from 'next/link';
import { getStore } from '@/lib/data/store';
import { runsHref } from './runs-query';

export async function WaitingBanner() {
  const approvals = (await (await getStore()).waitingSummary()).find((w) => w.kind === 'approval');
  if (!approvals || approvals.runs === 0) return null;
  return (
    <p
      data-testid="waiting-approvals"
      className="rounded-md bg-amber-50 px-3 py-2 text-sm text-amber-900 dark:bg-amber-950 dark:text-amber-200"
    >
      <strong data-testid="waiting-approvals-count">{approvals.runs}</strong>{' '}
      {approvals.runs === 1 ? 'run waits' : 'runs wait'} for approval; the oldest for {age(approvals.ageSeconds)}.{' '}
      <Link prefetch={false} href={runsHref({ status: 'waiting' })} className="font-medium underline">
        Show waiting runs
      </Link>
    </p>
  );
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
