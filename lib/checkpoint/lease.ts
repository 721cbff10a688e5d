/**
 * Keeps a claim's lease alive while its side effect runs. Renewal happens at a third of the lease, so two
 * renewals can fail (a slow disk, a busy database) before the lease passes. When a renewal finds the claim
 * gone, the claim was expired or taken over: the side effect is told through its signal, and its commit
 * will be refused by the fencing token anyway.
 */
export interface LeaseKeeper {
  stop(): void;
}

export function keepLease(options: {
  everyMs: number;
  renew: () => Promise<boolean>;
  onLost: () => void;
}): LeaseKeeper {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(tick, options.everyMs);
    timer.unref();
  };
  const tick = () => {
    options.renew().then(
      (held) => (held ? schedule() : stopped || options.onLost()),
      // A failed renewal is retried at the next tick; the lease still has two thirds left.
      schedule,
    );
  };
  schedule();
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
