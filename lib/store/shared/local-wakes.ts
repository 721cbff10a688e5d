/**
 * This process's wakes: a decision that made a parked run runnable (wakeRun in sqlite/waits.ts and
 * postgres/waits.ts) is announced here once its transaction committed, so a worker of this process that sits
 * idle takes the run at once instead of at its next poll. Process-wide, not per store object: a dashboard and a
 * worker in one process may each have opened their own store on the same database. A wake for another
 * database costs its listener one empty claim. Across processes the store itself must carry the wake.
 */
type Listener = (runId: string) => void;

const listeners = new Set<Listener>();

export function onLocalWake(listener: Listener): () => void {
  listeners.add(listener);
  return () => {
    listeners.delete(listener);
  };
}

/** Call only after the transaction that woke the run committed: a listener's claim must see the run queued. */
export function announceWake(runId: string): void {
  for (const listener of [...listeners]) {
    try {
      listener(runId);
    } catch {
      // A listener's failure is its own: the run is queued either way, and the next poll finds it.
    }
  }
}
