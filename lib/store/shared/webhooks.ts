/** What both backends make of the webhooks' rows, and the payload an event's deliveries carry. */
import type { DeliveryRow, DeliveryStatus, WebhookEvent, WebhookEventInput, WebhookRow } from '../contract';

export interface WebhookColumns {
  id: string;
  url: string;
  eventsJson: string;
  secret: string;
  paused: number;
  inDoubtSeconds: number;
  createdAt: number;
  updatedAt: number;
}

export function webhookRow(r: WebhookColumns): WebhookRow {
  const { eventsJson, ...rest } = r;
  return { ...rest, events: JSON.parse(eventsJson) as WebhookEvent[], paused: r.paused !== 0 };
}

export interface DeliveryColumns extends Omit<DeliveryRow, 'event' | 'status'> {
  event: string;
  status: string;
  leaseOwner?: string | null;
  leaseExpiresAt?: number | null;
}

export function deliveryRow(r: DeliveryColumns): DeliveryRow {
  const { leaseOwner: _owner, leaseExpiresAt: _lease, ...rest } = r;
  return {
    ...rest,
    event: r.event as WebhookEvent,
    status: r.status as DeliveryStatus,
    nextAttemptAt: Number(r.nextAttemptAt),
    createdAt: Number(r.createdAt),
    updatedAt: Number(r.updatedAt),
    deliveredAt: r.deliveredAt === null ? null : Number(r.deliveredAt),
  };
}

/** The stored payload: the event's type, when it happened (epoch seconds) and its data; the id is added when sent. */
export function eventPayload(event: WebhookEventInput, at: number): string {
  return JSON.stringify({ type: event.event, at, data: event.data });
}

/** A run's end as an event: `run.failed` or `run.completed`, keyed by its execution (a retried run fails anew). */
export function runEndEvent(run: {
  id: string;
  workflow: string;
  status: string;
  error: string | null;
  attempts: number;
}): WebhookEventInput | null {
  if (run.status !== 'failed' && run.status !== 'completed') return null;
  return {
    event: run.status === 'failed' ? 'run.failed' : 'run.completed',
    key: `${run.id}:${run.attempts}`,
    runId: run.id,
    data: { runId: run.id, workflow: run.workflow, status: run.status, error: run.error, attempt: run.attempts },
  };
}

/** A run parked on an approval: once per run and approval name, however often a replay parks it there again. */
export function approvalEvent(runId: string, workflow: string, name: string): WebhookEventInput {
  return { event: 'run.waiting_approval', key: `${runId}:${name}`, runId, data: { runId, workflow, approval: name } };
}
