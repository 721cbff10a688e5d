/**
 * A worker's proof of life and its judgement of its peers': its row (registered, beaten, written again when
 * pruned), the dead peers it finds at each beat, and the run lease each execution keeps alive.
 *
 * Noticing a dead peer: a run lease only passes after WAYBILL_RUN_LEASE_MS, which must be long enough that a
 * busy worker (an event loop blocked for seconds) is never taken over. Proof does better than a timeout, and
 * a blocked worker still has both proofs of life:
 * - on the same machine (one kernel, one pid namespace: lib/machine.ts), its pid: gone (or a zombie),
 *   the dead worker's claims are released and its runs resume at the next beat;
 * - elsewhere, where the store can tell (PostgreSQL: a session lock each worker holds), the lock: seen held
 *   once, then free on LIVENESS_BEATS beats in a row while the peer's heartbeat did not move. Both, because a
 *   live worker that lost its connection has no lock for a moment; it also cannot heartbeat meanwhile, and it
 *   has its lock back within a beat of its connection.
 * Without either (SQLite across machines, a peer this worker never saw alive), the lease is the only
 * evidence, and the fencing token covers a worker that was merely paused.
 */
import { every } from '../../clock';
import { RunInterruptedError } from '../../errors';
import { pidAlive } from '../../machine';
import type { WorkerRow } from '../../store/contract';
import type { WorkerSelf } from './options';

/** Beats in a row a peer's lock must be seen free, its heartbeat unmoved, before it is called dead. */
const LIVENESS_BEATS = 3;

interface Sighting {
  everHeld: boolean;
  freeBeats: number;
  heartbeatAt: number;
}

export class Heartbeat {
  /** What each peer's proof of life looked like at our recent beats (see the header). */
  private readonly sightings = new Map<string, Sighting>();
  private beating = false;
  /** When a beat last reached the store (the clock's ms); null before the first. */
  lastAt: number | null = null;

  constructor(private readonly self: WorkerSelf) {}

  /** The worker's row, then what it serves; a worker that could not say what it serves stops at once, and says so. */
  async register(): Promise<void> {
    const { store } = this.self.o;
    await this.writeRow();
    await this.self.o.onRegistered?.(this.self.id).catch(async (error) => {
      await store.stopWorker(this.self.id).catch(() => {});
      throw error;
    });
  }

  async beat(): Promise<void> {
    // One beat at a time: sightings are counted per beat, and a slow store must not make three of one.
    if (this.beating) return;
    this.beating = true;
    const { store, log } = this.self.o;
    try {
      if (!(await store.heartbeatWorker(this.self.id))) await this.registerAgain();
      this.lastAt = this.self.clock.now();
      this.self.metrics.heartbeatAt(this.lastAt);
      const peers = (await store.listWorkers({ notStopped: true })).filter((peer) => peer.id !== this.self.id);
      const here = peers.filter((peer) => this.onThisMachine(peer));
      for (const peer of here) {
        if (pidAlive(peer.pid)) continue;
        await this.declareDead(peer, `pid ${peer.pid} is gone on ${peer.host}`);
      }
      const elsewhere = peers.filter((peer) => !this.onThisMachine(peer));
      const life = await store.livenessOf(elsewhere.map((peer) => peer.id));
      for (const id of this.sightings.keys()) if (!life.has(id)) this.sightings.delete(id);
      for (const peer of elsewhere) {
        if (this.lostItsLife(peer, life.get(peer.id) ?? 'unknown')) {
          await this.declareDead(peer, `its liveness lock is free and it has not beaten for ${LIVENESS_BEATS} beats`);
        }
      }
    } catch (error) {
      log.warn('heartbeat failed', { error: String(error) });
    } finally {
      this.beating = false;
    }
  }

  private async writeRow(): Promise<void> {
    await this.self.o.store.registerWorker({
      id: this.self.id,
      host: this.self.host,
      pid: process.pid,
      machine: this.self.machine,
      slots: this.self.o.concurrency,
    });
  }

  /**
   * Our row is gone: pruned while this process was silent past the retention (stopped for a day, then continued).
   * Peers judge us by it, and the start form by what it says we serve: written again, and published again.
   */
  private async registerAgain(): Promise<void> {
    await this.writeRow();
    await this.self.o.onRegistered?.(this.self.id);
    this.self.o.log.warn('worker row was pruned while this worker was silent; registered again');
  }

  private async declareDead(peer: WorkerRow, reason: string): Promise<void> {
    const released = await this.self.o.store.markWorkerDead(peer.id, reason);
    this.sightings.delete(peer.id);
    this.self.o.log.warn('peer worker died; its runs resume now', {
      peer: peer.id,
      reason,
      releasedClaims: released,
    });
  }

  /** Proof by pid is only possible where the pid lives; a peer of unknown machine (older rows) never qualifies. */
  private onThisMachine(peer: WorkerRow): boolean {
    return this.self.machine !== null && peer.machine === this.self.machine;
  }

  /**
   * Seen holding its lock once, then free with its heartbeat unmoved for LIVENESS_BEATS of our beats in a row.
   * A peer never seen holding one (a worker of an older Waybill, or one dead before we looked) is left to its lease.
   */
  private lostItsLife(peer: WorkerRow, life: 'held' | 'free' | 'unknown'): boolean {
    const seen = this.sightings.get(peer.id);
    if (life === 'held') {
      this.sightings.set(peer.id, { everHeld: true, freeBeats: 0, heartbeatAt: peer.heartbeatAt });
      return false;
    }
    if (life === 'unknown' || !seen?.everHeld) return false;
    const freeBeats = seen.heartbeatAt === peer.heartbeatAt ? seen.freeBeats + 1 : 1;
    this.sightings.set(peer.id, { everHeld: true, freeBeats, heartbeatAt: peer.heartbeatAt });
    return freeBeats >= LIVENESS_BEATS;
  }
}

/**
 * Renews one execution's run lease, fenced by its attempt, until stopped; `interrupted` aborts once the lease is
 * no longer ours (paused, cancelled, taken over, gone).
 */
export function keepRunLease(
  self: WorkerSelf,
  runId: string,
  attempt: number,
): { interrupted: AbortSignal; stop: () => void } {
  const { store, runLeaseMs, heartbeatMs } = self.o;
  const interrupted = new AbortController();
  const stop = every(self.clock, Math.min(runLeaseMs / 3, heartbeatMs), async () => {
    const lease = await store
      .renewRunLease(runId, self.id, runLeaseMs, attempt)
      .catch(() => ({ held: true, status: null }));
    if (!lease.held) {
      interrupted.abort(
        new RunInterruptedError(
          runId,
          lease.status === 'running' ? 'it was taken over' : `it is ${lease.status ?? 'gone'}`,
        ),
      );
    }
    // Renewing at the heartbeat, not at a third of the lease, is what makes pause and cancel felt within
    // a second: the renewal is where the worker learns the run's status.
  });
  return { interrupted: interrupted.signal, stop };
}
