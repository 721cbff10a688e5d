/**
 * Keeps a claim's lease alive while its side effect runs. Renewal happens at a third of the lease, so two
 * renewals can fail (a slow disk, a busy database) before the lease passes. When a renewal finds the claim
 * gone, the claim was expired or taken over: the side effect is told through its signal, and its commit
 * will be refused by the fencing token anyway.
 *
 * A small class with one timer: one is made for every step, and most steps end before the first renewal,
 * so starting and stopping it must cost next to nothing. The timer is the checkpoint's clock's, so a test
 * passes a third of a lease by moving a ManualClock.
 */
import type { Clock, TimerHandle } from '../clock';
import { LeaseLostError } from '../errors';
import type { StepStore } from '../store/contract';
import type { StepCall } from './step-call';

const NOT_KEPT_ALIVE = { keepAlive: false } as const;

export class LeaseKeeper {
  private timer: TimerHandle | undefined;
  private stopped = false;

  constructor(
    private readonly store: StepStore,
    private readonly clock: Clock,
    private readonly token: string,
    private readonly leaseMs: number,
    private readonly call: StepCall,
    /** When the first renewal is due: a third of the lease, less what the claim has aged already. */
    firstInMs = leaseMs / 3,
  ) {
    this.schedule(firstInMs);
  }

  stop(): void {
    this.stopped = true;
    this.clock.clearTimeout(this.timer);
  }

  private schedule(inMs = this.leaseMs / 3): void {
    if (this.stopped) return;
    // A renewal due never keeps a process alive on its own.
    this.timer = this.clock.setTimeout(() => LeaseKeeper.tick(this), inMs, NOT_KEPT_ALIVE);
  }

  private static tick(self: LeaseKeeper): void {
    self.store.renewClaim(self.call.idempotencyKey, self.token, self.leaseMs).then(
      (held) => {
        if (held) self.schedule();
        else if (!self.stopped)
          self.call.abort(
            new LeaseLostError(self.call.idempotencyKey, 'the claim was expired or taken over while executing'),
          );
      },
      // A failed renewal is retried at the next tick; the lease still has two thirds left.
      () => self.schedule(),
    );
  }
}
