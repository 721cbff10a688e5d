/**
 * The long-running commands (`waybill worker`, `dashboard`, `up`, and the processes `up` starts) stop when
 * the process that started them goes. npx runs a bin as npm's child, so `npx waybill worker &` then
 * `kill -9 $!` kills npm and leaves the worker running, re-parented, where no one will look for it; a SIGTERM
 * to npm is not always passed on either. A pipe from the parent would need the parent's help, which npm does
 * not give; a re-parented process sees its ppid change, whoever its parent was, so that is what is watched.
 *
 * Gone, the parent is taken to mean SIGTERM: this process sends itself one, and stops as it would on the
 * terminal's (a worker drains, `up` stops its children). WAYBILL_FOLLOW_PARENT=off lets a process outlive its
 * parent on purpose (nohup, setsid).
 */

/** How often the parent is looked for; re-parenting is seen within this. */
const EVERY_MS = 500;

/**
 * Watches for the parent to go (unref'd: it never keeps the process alive); returns the stop. A process whose
 * parent is already init (pid 1) has nothing to follow.
 */
export function followParent(enabled: boolean, onGone: (parentPid: number) => void): () => void {
  const parent = process.ppid;
  if (!enabled || parent <= 1) return () => undefined;
  const timer = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(timer);
    onGone(parent);
  }, EVERY_MS);
  timer.unref();
  return () => clearInterval(timer);
}

/** onGone for followParent: stop as on SIGTERM, saying why on stderr. */
export function stopAsOnSigterm(what: string): (parentPid: number) => void {
  return (parentPid) => {
    try {
      process.stderr.write(`${what}: its parent (pid ${parentPid}) is gone; stopping as on SIGTERM\n`);
    } catch {
      // No stderr left to say it on.
    }
    process.kill(process.pid, 'SIGTERM');
  };
}
