/**
 * Group commit: calls that are ready at the same moment share one transaction, so many runs in one process
 * pay one disk flush (SQLite) or one round trip (PostgreSQL) between them instead of one each.
 *
 * The rule that keeps a lone run as fast as before: never wait for company. A call is queued; if no batch is
 * being written, a flush is scheduled for the end of this turn of the event loop (after every microtask, so
 * runs woken by the same finished batch all reach the queue), and if batches are being written, the queue goes
 * at the end of the turn one finishes in, with the runs that batch's answers woke. Nothing is held back to make a
 * batch bigger.
 *
 * Each call gets its own answer: `write` settles every request separately, so one request refused (a lease
 * lost, a key reused) rejects only its own caller. If `write` itself throws, every call in that batch gets the
 * error, exactly as each would have had it alone: the batch was one transaction, and it did not commit.
 */
export type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown };

/**
 * A request's answer as `write` gives it: settled, or still to come. A batch that had to be split sends its
 * requests on alone (PostgreSQL, steps-batch.ts); each caller is then answered when its own request is,
 * never held for a neighbour still waiting for a row lock, and the batch's slot is free meanwhile.
 */
export type Answer<T> = Settled<T> | Promise<Settled<T>>;

export interface GroupCommitOptions {
  /** Most requests in one batch; more wait for the next one. */
  maxBatch?: number;
  /** Batches written at once (PostgreSQL over a pool may write several; SQLite writes one at a time). */
  maxInFlight?: number;
}

/** Returns a function with the per-call signature of `write`, batching what is queued together. */
export function groupCommit<Req, Res>(
  write: (requests: Req[]) => Promise<Answer<Res>[]>,
  options: GroupCommitOptions = {},
): (request: Req) => Promise<Res> {
  const maxBatch = options.maxBatch ?? 256;
  const maxInFlight = options.maxInFlight ?? 1;
  type Waiter = { request: Req; resolve: (value: Res) => void; reject: (error: unknown) => void };
  let queue: Waiter[] = [];
  let inFlight = 0;
  let scheduled = false;

  function flush(): void {
    scheduled = false;
    while (queue.length > 0 && inFlight < maxInFlight) {
      const batch = queue.length <= maxBatch ? queue : queue.slice(0, maxBatch);
      queue = batch === queue ? [] : queue.slice(maxBatch);
      inFlight += 1;
      void writeBatch(batch);
    }
  }

  async function writeBatch(batch: Waiter[]): Promise<void> {
    try {
      const settled = await write(batch.map((w) => w.request));
      if (settled.length !== batch.length) {
        throw new Error(`group commit: ${settled.length} answers for ${batch.length} requests`);
      }
      const deliver = (waiter: Waiter, answer: Settled<Res>) => {
        if (answer.ok) waiter.resolve(answer.value);
        else waiter.reject(answer.error);
      };
      batch.forEach((waiter, i) => {
        const answer = settled[i] as Answer<Res>;
        if (answer instanceof Promise) answer.then((a) => deliver(waiter, a), waiter.reject);
        else deliver(waiter, answer);
      });
    } catch (error) {
      for (const waiter of batch) waiter.reject(error);
    } finally {
      inFlight -= 1;
      // What queued while this batch was written goes at the end of this turn, with the runs this batch's
      // answers wake: sent at once it would go without them, and they would form a batch of their own, one
      // more transaction for the same steps, for good.
      if (queue.length > 0 && !scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    }
  }

  return (request) =>
    new Promise<Res>((resolve, reject) => {
      queue.push({ request, resolve, reject });
      if (!scheduled && inFlight < maxInFlight) {
        scheduled = true;
        setImmediate(flush);
      }
    });
}
