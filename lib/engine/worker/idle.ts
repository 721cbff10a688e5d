/**
 * How an idle worker waits for work. It sleeps until the store wakes it (store.subscribeWakes: PostgreSQL's
 * NOTIFY from the transaction that queued a run, SQLite's watcher), a slot of its own frees, or its poll timer
 * fires: every idlePollMs while wakes are delivered, for what nothing announces (a run lease passing, a sleep
 * coming due), every pollMs while they are not. A wake that arrives while it picks is kept, and it picks once more.
 */
import type { Wake } from '../../store/contract';
import type { WorkerSelf } from './options';

export class Idle {
  /**
   * Why the loop should look again now (a wake, a slot freed), set since its last pick began: a wake that comes
   * while a pick runs is not lost, the loop picks once more.
   */
  private pending = false;
  private wakeUp: (() => void) | null = null;
  private wakesLive = false;
  private asleep: 'listening' | 'polling' | null = null;
  private readonly woken = { notified: 0, polled: 0 };
  /** When the last pick began (monotonic): a wait that came due since then is looked for again at once. */
  private lookedAt = 0;
  /**
   * With a rate limit served, how often a free slot looks again: a held run's place comes with time, which no
   * wake announces. A twentieth of the shortest period. The window slides, so a held start gets the place of the
   * start one limit before it, a period later; each look late adds to that period, and the rate achieved is the
   * limit over (period + lateness). Looking once a slot (period / limit) lost up to 1/limit of the rate: 10% at
   * 10 a second, half at 1 a minute. A twentieth loses at most 5% whatever the limit.
   */
  private readonly rateLookMs: number | null;

  constructor(
    private readonly self: WorkerSelf,
    private readonly draining: AbortSignal,
    private readonly slotFree: () => boolean,
  ) {
    const looks = Object.values(self.o.registry.limits()).flatMap(({ rateLimit }) =>
      rateLimit ? [rateLimit.periodMs / 20] : [],
    );
    this.rateLookMs = looks.length > 0 ? Math.min(...looks) : null;
  }

  get wakes(): { notified: number; polled: number } {
    return { ...this.woken };
  }

  get listening(): boolean {
    return this.wakesLive;
  }

  get sleeping(): 'listening' | 'polling' | null {
    return this.asleep;
  }

  /** A pick begins: what woke the loop is used up by it, and what comes due from now on is looked for after. */
  picking(): void {
    this.pending = false;
    this.lookedAt = this.self.clock.monotonic();
  }

  onWake(wake: Wake): void {
    if (wake.kind === 'runnable') {
      // A run of a workflow served elsewhere: another worker's to take.
      if (wake.workflow !== undefined && !this.self.o.registry.has(wake.workflow)) return;
      this.woken.notified++;
    } else {
      // `lost`: the long sleep in progress must end, to poll at the short interval; `listening`: look now.
      this.wakesLive = wake.kind === 'listening';
    }
    this.wake();
  }

  wake(): void {
    this.pending = true;
    this.wakeUp?.();
  }

  /**
   * Until a wake, a slot freed, the poll timer or the drain; at once if one of the first two came meanwhile. The
   * poll is cut short by the first wait due ahead (a sleep's end, a timeout) while a slot is free, so a run parked
   * for an hour wakes on time however long the poll: no notification can announce a time coming. Nothing spins:
   * a wait due before the pick's look is one this worker could not take, and nextWakeIn skips it; one that came
   * due since is looked for again at once.
   */
  async sleep(): Promise<void> {
    // Consumed here too: with every slot busy the loop does not pick, and must not spin on a wake it cannot use.
    if (this.pending) {
      this.pending = false;
      return;
    }
    const { o, clock } = this.self;
    const done = new AbortController();
    const woken = new Promise<'woken'>((resolve) => {
      this.wakeUp = () => resolve('woken');
    });
    let ms = (this.wakesLive ? o.idlePollMs : o.pollMs) * (0.5 + Math.random());
    if (this.slotFree()) {
      // A wait that came due between the pick's look and this read would otherwise be slept past: it counts.
      const sinceMs = clock.monotonic() - this.lookedAt;
      const due = await o.store
        .nextWakeIn({ workflows: o.registry.names(), runId: o.onlyRun, sinceMs })
        .catch(() => null);
      if (due !== null) ms = Math.min(ms, due);
      if (this.rateLookMs !== null) ms = Math.min(ms, this.rateLookMs);
    }
    const timer = clock.sleep(ms, AbortSignal.any([done.signal, this.draining])).then(
      () => 'polled' as const,
      () => 'stopped' as const,
    );
    this.asleep = this.wakesLive ? 'listening' : 'polling';
    const how = await Promise.race([woken, timer]);
    this.asleep = null;
    this.wakeUp = null;
    done.abort();
    if (how === 'polled') this.woken.polled++;
  }
}
