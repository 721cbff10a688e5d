/**
 * The run's durable waits, newest decision last: an open one first says what the run waits for (approval,
 * signal or sleep), since when and until when; an approval shows its details and, for an operator, the
 * decision buttons. Decided ones say who decided, when and the note. Nothing is shown for a run that never waited.
 */
import { Card, relative } from '@/app/components/ui';
import { waitView } from '@/lib/control/waits';
import { getStore } from '@/lib/data/store';
import type { WaitKind } from '@/lib/store/contract';
import { WaitDecision } from './wait-panel';

/** How an open wait is headed, by its kind. */
const WAIT_TITLE: Record<WaitKind, string> = {
  approval: 'Approval',
  signal: 'Signal',
  sleep: 'Sleep',
  child: 'Child run',
  event: 'Event',
};

export async function WaitsCard({
  runId,
  operator,
  status,
  now,
}: {
  runId: string;
  operator: boolean;
  status: string;
  now: number;
}) {
  const rows = (await (await getStore()).listWaits(runId)).map(waitView);
  if (rows.length === 0) return null;
  const open = rows.filter((w) => w.decidedAt === null);
  const decided = rows.filter((w) => w.decidedAt !== null);
  const finished = ['completed', 'failed', 'cancelled', 'rejected'].includes(status);
  return (
    <Card title={open.length ? 'Waiting' : 'Waits'} testId="waits">
      <ul className="space-y-4">
        {open.map((w) => (
          <li key={`${w.kind}:${w.name}`} data-testid="wait-open" data-wait={w.name}>
            <p className="text-sm">
              <strong>{WAIT_TITLE[w.kind]}</strong> <code>{w.name}</code>, since {relative(w.createdAt, now)}
              {w.dueAt !== null && (
                <>
                  ; {w.kind === 'sleep' ? 'wakes' : `times out (${w.onTimeout})`} {relative(w.dueAt, now)}
                </>
              )}
              {w.dueAt === null && w.kind !== 'sleep' && <>; no timeout</>}
            </p>
            {/* In full, not collapsed: it is what the approver decides on (cut at 4,000 characters). */}
            {w.details !== null && (
              <pre data-testid="wait-details" className="wb-json-pre mt-2 max-h-64 overflow-auto">
                {pretty(w.details)}
              </pre>
            )}
            {w.kind === 'approval' &&
              !finished &&
              (operator ? (
                <WaitDecision runId={runId} name={w.name} />
              ) : (
                <p className="mt-2 text-xs text-zinc-600 dark:text-zinc-400" data-testid="wait-readonly">
                  An operator can approve or reject this.
                </p>
              ))}
          </li>
        ))}
        {decided.map((w) => (
          <li
            key={`${w.kind}:${w.name}`}
            data-testid="wait-decided"
            className="text-sm text-zinc-700 dark:text-zinc-300"
          >
            <code>{w.name}</code> ({w.kind}): {decisionText(w.decision)} by {w.decidedBy} {relative(w.decidedAt, now)}
            {w.note ? ` — “${w.note}”` : ''}
          </li>
        ))}
      </ul>
    </Card>
  );
}

function decisionText(decision: unknown): string {
  const d = (decision ?? {}) as { approved?: boolean; timedOut?: boolean; slept?: boolean };
  if (d.timedOut) return d.approved === undefined ? 'timed out' : `timed out → ${d.approved ? 'approved' : 'rejected'}`;
  if (d.slept) return 'woke';
  if (d.approved !== undefined) return d.approved ? 'approved' : 'rejected';
  return 'received';
}

function pretty(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value, null, 2);
  return text.length > 4000 ? `${text.slice(0, 4000)}…` : text;
}
