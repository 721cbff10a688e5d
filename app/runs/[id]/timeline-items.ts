/**
 * The timeline's items, shaped on the server side of the page: step events and the audit log's lines for the
 * run, newest first, each operator action once. An action through the dashboard or the API writes two
 * records: the store's event in the action's transaction ("cancel by alice (operator): running → cancelled",
 * "expired by …") and, once it has taken effect, the audit line (who, as what role, with their reason). Shown
 * side by side they read as the action done twice; here the audit line absorbs its event and keeps what only
 * the event knew (the transition, the step). An event with no audit line (the CLI, an older store) stays.
 * A decision on a wait is the same: the store's event ("approval review approved by alice (operator): ok")
 * and the audit line (approve, alice, the note) are one decision, shown once as the audit line; a timeout's
 * decision has no audit line and stays an event.
 */
import type { AuditEntry, Outcome, StepEvent } from '@/lib/store/contract';

export type TimelineKind = 'steps' | 'failures' | 'claims' | 'operator';

export const TIMELINE_KINDS: { kind: TimelineKind; label: string }[] = [
  { kind: 'steps', label: 'Steps' },
  { kind: 'failures', label: 'Failures' },
  { kind: 'claims', label: 'Expired / resolved' },
  { kind: 'operator', label: 'Operator actions' },
];

const KIND_OF: Record<Outcome, TimelineKind> = {
  executed: 'steps',
  skipped: 'steps',
  awaited: 'steps',
  failed: 'failures',
  lease_lost: 'failures',
  key_reuse: 'failures',
  expired: 'claims',
  resolved: 'claims',
  operator: 'operator',
};

export type TimelineItem =
  | { type: 'event'; kind: TimelineKind; at: number; event: StepEvent }
  | {
      type: 'action';
      kind: 'operator';
      at: number;
      entry: AuditEntry;
      event: StepEvent | null;
      transition: string | null;
    };

/** How far apart an action's event and its audit line may be written: the audit follows the commit at once. */
const PAIR_WINDOW_S = 10;

/**
 * The words the store's event for each audited action starts with, before " by <actor>". A decision on a wait
 * (lib/store/shared/waits.ts decisionDetail: "approval review approved by …") names the wait, which its audit
 * line's target holds as `<runId>/<name>`.
 */
const EVENT_VERB: Record<string, { outcome: Outcome; verb: (entry: AuditEntry) => string | null; byKey: boolean }> = {
  start: { outcome: 'operator', verb: () => 'started', byKey: false },
  pause: { outcome: 'operator', verb: () => 'pause', byKey: false },
  resume: { outcome: 'operator', verb: () => 'resume', byKey: false },
  cancel: { outcome: 'operator', verb: () => 'cancel', byKey: false },
  retry: { outcome: 'operator', verb: () => 'retry', byKey: false },
  expire: { outcome: 'expired', verb: () => 'expired', byKey: true },
  resolve: { outcome: 'resolved', verb: () => 'resolved', byKey: true },
  approve: { outcome: 'operator', verb: (e) => decided(e, 'approval', 'approved'), byKey: false },
  reject: { outcome: 'operator', verb: (e) => decided(e, 'approval', 'rejected'), byKey: false },
  signal: { outcome: 'operator', verb: (e) => decided(e, 'signal', 'signalled'), byKey: false },
};

/** "approval review approved", from an audit line whose target is "<runId>/review". */
function decided(entry: AuditEntry, kind: string, what: string): string | null {
  const prefix = `${entry.runId}/`;
  if (!entry.runId || !entry.target.startsWith(prefix)) return null;
  return `${kind} ${entry.target.slice(prefix.length)} ${what}`;
}

/** Newest first; on a tie the audit line (written after its event) comes first, then events by id, newest first. */
export function timelineItems(events: StepEvent[], audit: AuditEntry[]): TimelineItem[] {
  const claimed = new Set<number>();
  const actions: TimelineItem[] = audit.map((entry) => {
    const event = pairOf(entry, events, claimed);
    if (event) claimed.add(event.id);
    const transition = event?.outcome === 'operator' ? transitionOf(event.detail) : null;
    return { type: 'action', kind: 'operator', at: entry.at, entry, event, transition };
  });
  const rest: TimelineItem[] = events
    .filter((event) => !claimed.has(event.id))
    .map((event) => ({ type: 'event', kind: KIND_OF[event.outcome] ?? 'operator', at: event.at, event }));
  return [...actions, ...rest].sort((a, b) => b.at - a.at || order(a) - order(b));
}

function order(item: TimelineItem): number {
  return item.type === 'action' ? -Number.MAX_SAFE_INTEGER + item.entry.id : -item.event.id;
}

/** The unclaimed event this audit line is the record of, if any: same kind, same actor, same key, close in time. */
function pairOf(entry: AuditEntry, events: StepEvent[], claimed: Set<number>): StepEvent | null {
  const shape = EVENT_VERB[entry.action];
  const verb = shape?.verb(entry);
  if (!shape || !verb) return null;
  const prefix = `${verb} by ${entry.actor}`;
  let best: StepEvent | null = null;
  for (const event of events) {
    if (claimed.has(event.id) || event.outcome !== shape.outcome) continue;
    if (shape.byKey && event.idemKey !== entry.target) continue;
    if (!event.detail || !(event.detail === prefix || event.detail.startsWith(`${prefix}:`))) continue;
    const gap = Math.abs(entry.at - event.at);
    if (gap > PAIR_WINDOW_S) continue;
    if (!best || gap < Math.abs(entry.at - best.at)) best = event;
  }
  return best;
}

/** "cancel by alice (operator): running → cancelled" → "running → cancelled". */
function transitionOf(detail: string | null): string | null {
  const match = detail ? /: (\S+ → \S+)$/.exec(detail) : null;
  return match ? match[1]! : null;
}

export function countByKind(items: TimelineItem[]): Record<TimelineKind, number> {
  const counts: Record<TimelineKind, number> = { steps: 0, failures: 0, claims: 0, operator: 0 };
  for (const item of items) counts[item.kind] += 1;
  return counts;
}
