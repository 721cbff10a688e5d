/**
 * The part of a metrics scrape that only grows — steps by outcome and the step-duration histograms, read from
 * `committed` and `step_events` — kept as running totals per store instance and advanced by a watermark, so a
 * scrape reads only the rows written since the last one. Counting a million rows on every scrape took seconds
 * (and on SQLite, seconds of a blocked event loop). The first scrape of a process reads the history once.
 *
 * Rows pruned later stay counted: the totals only grow, as Prometheus counters must, with one exception: on
 * SQLite, when the row at the `committed` watermark is gone or renumbered, rowids at or below the mark may be
 * handed out again, so the executed counts start over from the rows that remain (a counter reset, which
 * Prometheus's rate() and increase() take in their stride). Each process counts on its own, so two
 * dashboard processes agree unless a prune ran between their first scrapes.
 */
import type { HistogramRow } from './histogram';
import { METRIC_OUTCOMES, type DurationHistogram, type MetricOutcome } from './types';

export class MetricsTally {
  readonly steps = Object.fromEntries(METRIC_OUTCOMES.map((o) => [o, 0])) as Record<MetricOutcome, number>;
  readonly durations: Record<'executed' | 'failed' | 'lease_lost', DurationHistogram>;
  /** How far `committed` and `step_events` have been read: a backend's own cursor (rowid, id or time). */
  committedMark = Number.NEGATIVE_INFINITY;
  eventsMark = Number.NEGATIVE_INFINITY;
  /** SQLite: the row at `committedMark` when it was read, to tell whether it is still the one there. */
  committedMarkRow: { idemKey: string; committedAt: number } | undefined;

  constructor(readonly boundsMs: readonly number[]) {
    const empty = (): DurationHistogram => ({ boundsMs: [...boundsMs], counts: boundsMs.map(() => 0), count: 0, sumMs: 0 });
    this.durations = { executed: empty(), failed: empty(), lease_lost: empty() };
  }

  /** The tally for these bounds: the same one while the bounds stay, a fresh one when they change. */
  static for(current: MetricsTally | undefined, boundsMs: readonly number[]): MetricsTally {
    return current && current.boundsMs.join() === boundsMs.join() ? current : new MetricsTally(boundsMs);
  }

  private advancing: Promise<void> | undefined;

  /** Runs an advance alone: two scrapes at once would otherwise both read, and count, the same new rows. */
  async exclusive(advance: () => Promise<void>): Promise<void> {
    while (this.advancing) await this.advancing.catch(() => undefined);
    this.advancing = advance().finally(() => (this.advancing = undefined));
    return this.advancing;
  }

  /** Forgets what `committed` contributed, to count it again from its first row. */
  resetExecuted(): void {
    this.steps.executed = 0;
    const h = this.durations.executed;
    h.counts.fill(0);
    h.count = 0;
    h.sumMs = 0;
    this.committedMark = Number.NEGATIVE_INFINITY;
    this.committedMarkRow = undefined;
  }

  /** Adds a chunk's bucket counts (n, total, b0…bN as the SQL names them) to one histogram. */
  addDurations(target: 'executed' | 'failed' | 'lease_lost', row: HistogramRow | undefined): void {
    if (!row) return;
    const h = this.durations[target];
    h.count += Number(row.n ?? 0);
    h.sumMs += Number(row.total ?? 0);
    for (let i = 0; i < h.counts.length; i++) h.counts[i]! += Number(row[`b${i}`] ?? 0);
  }

  /** Copies, so a caller holding a snapshot does not see the next scrape's additions. */
  snapshot(): { steps: Record<MetricOutcome, number>; stepDurations: Record<'executed' | 'failed' | 'lease_lost', DurationHistogram> } {
    const copy = (h: DurationHistogram): DurationHistogram => ({ ...h, boundsMs: [...h.boundsMs], counts: [...h.counts] });
    return {
      steps: { ...this.steps },
      stepDurations: { executed: copy(this.durations.executed), failed: copy(this.durations.failed), lease_lost: copy(this.durations.lease_lost) },
    };
  }
}
