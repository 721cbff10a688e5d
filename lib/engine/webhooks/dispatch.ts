/**
 * The alert webhooks' dispatcher: every `everyMs` it takes the due deliveries from the store's outbox under a
 * lease, posts each (signed, with its id for the receiver to deduplicate on) and records what came of it. A 2xx
 * is delivered; anything else (a status, a refused connection, a timeout) is due again after an exponential
 * backoff with full jitter, until the last attempt leaves it `failed`. Every state is in the store, so a
 * dispatcher killed at any instant loses nothing: what it held is due to the next one once its lease passes, and
 * a delivery posted but not recorded is posted again. At least once; the id makes it once for the receiver.
 *
 * Run by every `waybill worker` (lib/engine/worker/loop.ts); the store hands each delivery to one at a time.
 */
import { type Clock, every, systemClock } from '../../clock';
import type { DeliveryAttempt, DueDelivery, WebhookStore } from '../../store/contract';
import { type Logger, silentLogger } from '../log';
import { backoffMs } from '../retry-policy';
import { DELIVERY_HEADER, EVENT_HEADER, SIGNATURE_HEADER, signWebhook } from './signature';

export interface DispatchSettings {
  /** How often the outbox is looked at (1 s): a delivery goes out at most this late. */
  everyMs?: number;
  /** A receiver silent this long is a failed attempt (10 s). The lease on a delivery is twice this. */
  timeoutMs?: number;
  /** Attempts before a delivery is `failed` (10). */
  maxAttempts?: number;
  /** The backoff's first wait and its cap (5 s, 1 h); doubled each attempt, each wait drawn from [0, it). */
  retryMs?: number;
  maxRetryMs?: number;
  /** Deliveries taken per look (20). */
  batch?: number;
  /**
   * Writes the events a scan finds (a run stalled, a claim in doubt: lib/control/webhooks.ts scanAlerts), run
   * before a look at most every `scanMs` (10 s). Handed in by `waybill worker`: the stall judge is the control
   * plane's, above the engine.
   */
  scan?: () => Promise<unknown>;
  scanMs?: number;
}

export interface DispatcherOptions extends DispatchSettings {
  store: WebhookStore;
  /** Who holds the leases: the worker's id. */
  owner: string;
  clock?: Clock;
  log?: Logger;
  /** The jitter's source; a seeded one (lib/random.ts) in tests. */
  random?: () => number;
}

export class WebhookDispatcher {
  private readonly o: Required<Omit<DispatcherOptions, 'random' | 'scan'>> & {
    random: () => number;
    scan?: () => Promise<unknown>;
  };
  private scannedAt = Number.NEGATIVE_INFINITY;
  private looking: Promise<number> | null = null;
  private stopTimer: (() => void) | null = null;

  constructor(options: DispatcherOptions) {
    this.o = {
      everyMs: 1000,
      timeoutMs: 10_000,
      maxAttempts: 10,
      retryMs: 5000,
      maxRetryMs: 3_600_000,
      batch: 20,
      scanMs: 10_000,
      clock: systemClock,
      log: silentLogger,
      random: Math.random,
      ...Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)),
    } as WebhookDispatcher['o'];
  }

  /** Looks now and then every `everyMs`, until stop(). */
  start(): void {
    if (this.stopTimer) return;
    this.stopTimer = every(this.o.clock, this.o.everyMs, () => void this.dispatchDue(), { keepAlive: false });
    void this.dispatchDue();
  }

  /** No new look; resolves when the look in progress has recorded what it posted. */
  async stop(): Promise<void> {
    this.stopTimer?.();
    this.stopTimer = null;
    await this.looking?.catch(() => 0);
  }

  /** One look: posts the due deliveries, one look at a time; answers how many were delivered. */
  dispatchDue(): Promise<number> {
    if (this.looking) return this.looking;
    this.looking = this.look().finally(() => {
      this.looking = null;
    });
    return this.looking;
  }

  private async look(): Promise<number> {
    const { store, owner, log, clock } = this.o;
    if (this.o.scan && clock.monotonic() - this.scannedAt >= this.o.scanMs) {
      this.scannedAt = clock.monotonic();
      await this.o.scan().catch((error: unknown) => {
        log.warn('could not scan for stalled runs and claims in doubt', { workerId: owner, error: String(error) });
      });
    }
    let due: DueDelivery[];
    try {
      due = await store.claimDueDeliveries({ owner, leaseMs: this.o.timeoutMs * 2, limit: this.o.batch });
    } catch (error) {
      log.warn('could not read the webhook outbox', { workerId: owner, error: String(error) });
      return 0;
    }
    const outcomes = await Promise.all(
      due.map(async (d) => {
        const attempt = await this.post(d);
        try {
          await store.recordDeliveryAttempt(d.id, owner, attempt);
        } catch (error) {
          // Posted but not recorded: its lease passes and it is posted again, which its id makes harmless.
          log.warn('could not record a webhook delivery', { delivery: d.id, error: String(error) });
        }
        if (!attempt.delivered) {
          log.info('webhook delivery failed', { delivery: d.id, status: attempt.status, error: attempt.error });
        }
        return attempt.delivered;
      }),
    );
    return outcomes.filter(Boolean).length;
  }

  private async post(d: DueDelivery): Promise<DeliveryAttempt> {
    const body = deliveryBody(d);
    let status: number | null = null;
    let error: string | null = null;
    try {
      const answer = await fetch(d.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'waybill-webhooks',
          [SIGNATURE_HEADER]: signWebhook(d.secret, body, this.o.clock.now() / 1000),
          [DELIVERY_HEADER]: d.id,
          [EVENT_HEADER]: d.event,
        },
        body,
        redirect: 'manual',
        signal: AbortSignal.timeout(this.o.timeoutMs),
      });
      status = answer.status;
      await answer.body?.cancel().catch(() => undefined);
      if (status >= 200 && status < 300) return { delivered: true, status, error: null, retryInMs: null };
      error = `HTTP ${status}`;
    } catch (thrown) {
      const e = thrown as Error & { cause?: { code?: string; message?: string } };
      error = e.name === 'TimeoutError' ? `no answer in ${this.o.timeoutMs} ms` : (e.cause?.code ?? e.message);
    }
    const attempts = d.attempts + 1;
    const retryInMs =
      attempts >= this.o.maxAttempts
        ? null
        : backoffMs(
            { backoff: { initialMs: this.o.retryMs, maxMs: this.o.maxRetryMs, factor: 2, jitter: true } },
            attempts,
            this.o.random,
          );
    return { delivered: false, status, error, retryInMs };
  }
}

/** What is posted: the delivery's id, then the stored event (`type`, `at`, `data`). The same bytes each attempt. */
export function deliveryBody(d: { id: string; payloadJson: string }): string {
  return JSON.stringify({ id: d.id, ...(JSON.parse(d.payloadJson) as object) });
}
