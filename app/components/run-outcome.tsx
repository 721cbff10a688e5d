/**
 * A step event's outcome as a badge, coloured by what it means for the run: work done, work replayed,
 * waiting, trouble, or an operator's hand.
 */
import type { Outcome } from '@/lib/store/contract';

/** Tone classes in globals.css: a timeline of a hundred events carries a hundred badges. */
const OUTCOME_TONE: Record<Outcome, string> = {
  executed: 'wb-tone-blue',
  skipped: 'wb-tone-emerald',
  awaited: 'wb-tone-amber',
  failed: 'wb-tone-red',
  lease_lost: 'wb-tone-red',
  key_reuse: 'wb-tone-red',
  expired: 'wb-tone-orange',
  resolved: 'wb-tone-violet',
  operator: 'wb-tone-zinc',
};

export function OutcomeBadge({ outcome }: { outcome: Outcome }) {
  return (
    <span className={`wb-badge ${OUTCOME_TONE[outcome] ?? OUTCOME_TONE.operator}`}>{outcome.replace('_', ' ')}</span>
  );
}
