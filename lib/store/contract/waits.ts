/** A run's durable waits (approvals, signals, sleeps): what lib/engine/waits.ts and lib/control/waits.ts need. */

/** What a wait waits for: a person's decision, a signal's payload, the clock, a child run's end, or an event. */
export const WAIT_KINDS = ['approval', 'signal', 'sleep', 'child', 'event'] as const;
export type WaitKind = (typeof WAIT_KINDS)[number];

export interface WaitRow {
  runId: string;
  name: string;
  kind: WaitKind;
  detailsJson: string | null;
  /** Epoch seconds, as every time in the store. */
  createdAt: number;
  dueAt: number | null;
  onTimeout: string | null;
  decidedAt: number | null;
  decisionJson: string | null;
  decidedBy: string | null;
  note: string | null;
}

export interface WaitDecision {
  runId: string;
  name: string;
  kind: WaitKind;
  decisionJson: string;
  decidedBy: string;
  note?: string | null;
  /**
   * A signal may arrive before its run reaches the wait: then the row is created, already decided, and the
   * run finds it there. An approval cannot be decided before it is asked for (NotFound).
   */
  createIfAbsent?: boolean;
  /**
   * A timeout: decided only where the wait's due time has come by the store's clock (the database's on
   * PostgreSQL), never by the caller's, which may run ahead. Before then nothing changes (`decided: false`,
   * the row as it is).
   */
  onlyWhenDue?: boolean;
  /**
   * With createIfAbsent: the most waits the run may hold. A row that would be created past it is refused
   * (WaitLimitError) and nothing is written; deciding a wait the run already holds is never refused.
   */
  maxWaits?: number;
}

export interface WaitStore {
  /** A run's wait of one kind and name: (run, kind, name) is the waits table's key. */
  getWait(runId: string, kind: WaitKind, name: string): Promise<WaitRow | null>;

  /**
   * The open waits of kind `event` for the event `name` recorded by `recordedBy` (epoch seconds: the event's
   * own time, so a re-send never wakes a wait recorded after the first send), oldest first.
   */
  openEventWaits(name: string, recordedBy: number): Promise<WaitRow[]>;

  /** A run's waits, oldest first (the run page, the API's run view). */
  listWaits(runId: string): Promise<WaitRow[]>;

  /**
   * The run reached a wait: the row is created if absent (due `dueInMs` from now on the store's clock, or at
   * `dueAt`), and the row as stored returned — an existing one unchanged, so a replay keeps its first timeout.
   */
  recordWait(wait: {
    runId: string;
    name: string;
    kind: WaitKind;
    detailsJson?: string | null;
    dueInMs?: number | null;
    dueAt?: number | null;
    onTimeout?: string | null;
  }): Promise<WaitRow>;

  /**
   * Decides a wait once: one conditional UPDATE (decided_at IS NULL), so of two deciders at one instant one
   * wins; the other gets `decided: false` and the winner's row. The winning decision also flips the run from
   * `waiting` to `queued` and records an `operator` event, in the same transaction, so the ordinary pick
   * finds it at once. NotFoundError when there is no such run, or (without createIfAbsent) no such wait.
   */
  decideWait(decision: WaitDecision): Promise<{ decided: boolean; wait: WaitRow }>;

  /**
   * Milliseconds until the wait's due time by the store's clock (0 or less: it is due), or null when it has none
   * or does not exist: the time a run's own timeout is left, judged where every lease is judged.
   */
  waitDueInMs(runId: string, kind: WaitKind, name: string): Promise<number | null>;

  /**
   * Parks the run this execution holds at its wait `name` (or at the first decided of several, `names`): `waiting`,
   * no owner, no lease. Under the waits' row locks: if one was decided meanwhile, nothing is parked (`decided`)
   * and the run goes on. `lost`: this execution no longer holds the run.
   */
  parkRun(
    runId: string,
    kind: WaitKind,
    name: string | string[],
    workerId: string,
    attempt: number,
  ): Promise<'parked' | 'decided' | 'lost'>;

  /**
   * Runs waiting now, by the kind of their open wait: how many, and the oldest such wait — its run, its name,
   * its creation time and age (store clock). A kind no run waits on is absent.
   */
  waitingSummary(): Promise<WaitingKind[]>;

  /**
   * Milliseconds until the first open wait of a `waiting` run of these workflows comes due (a sleep's wake, a
   * timeout), by the store's clock; null when none is ahead. One that came due within the last `sinceMs` (the
   * caller's last claim looked then, and missed it by a hair) counts, as 0: look again now. One due before that
   * does not: the claim saw it and could not take it, so an idle worker never spins on it. One read of the
   * waits_open_due index. A worker sleeps until then or its poll interval, whichever comes first.
   */
  nextWakeIn(request: { workflows: string[]; runId?: string; sinceMs?: number }): Promise<number | null>;

  /**
   * Calls `listener` with the run's id whenever a decision of this process (through any store object on any
   * backend) makes a parked run runnable, after its transaction committed: an idle worker in this process
   * takes the run at once instead of at its next poll. Other processes learn of it from the store (the merge
   * point for LISTEN/NOTIFY is wakeRun in sqlite/waits.ts and postgres/waits.ts). Returns the unsubscribe.
   */
  onLocalWake(listener: (runId: string) => void): () => void;
}

export interface WaitingKind {
  kind: WaitKind;
  runs: number;
  oldestAt: number;
  ageSeconds: number;
  /** The run of the oldest open wait of this kind, and the wait's name. */
  oldestRunId: string;
  oldestName: string;
}
