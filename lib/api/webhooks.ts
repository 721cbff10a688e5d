/**
 * The bodies, path parameters, query and answers of /api/v1/webhooks. The fields' rules are lib/control/webhooks',
 * so the API, the CLI and the dashboard refuse alike.
 */
import { z } from 'zod';
import { addInput, DELIVERIES_PAGE_MAX, deliveryInput, idInput } from '../control/webhooks';
import { DELIVERY_STATUSES, WEBHOOK_EVENTS } from '../store/contract';
import { queryLimit } from './validate';

export const addWebhookBody = addInput;
export const webhookIdParam = idInput.shape.id;
export const deliveryIdParam = deliveryInput.shape.id;
export const webhookActionBody = z.strictObject({ reason: idInput.shape.reason }).optional();
export const WEBHOOK_ACTIONS = ['pause', 'resume'] as const;
export const webhookActionParam = z.enum(WEBHOOK_ACTIONS);

export const deliveriesQuery = z.strictObject({
  webhookId: z.string().optional(),
  status: z.enum(DELIVERY_STATUSES, { error: `must be one of ${DELIVERY_STATUSES.join(', ')}` }).optional(),
  limit: queryLimit(DELIVERIES_PAGE_MAX).optional(),
});

const epoch = z.number().describe('epoch seconds');

export const webhookSchema = z.strictObject({
  id: z.string(),
  url: z.string(),
  events: z.array(z.enum(WEBHOOK_EVENTS)),
  paused: z.boolean(),
  inDoubtSeconds: z.number().int(),
  secretHint: z.string().describe('the secret’s last four characters'),
  createdAt: epoch,
  updatedAt: epoch,
});

export const deliverySchema = z.strictObject({
  id: z.string().describe('the receiver’s key to deduplicate on (the Waybill-Delivery header)'),
  webhookId: z.string(),
  event: z.enum(WEBHOOK_EVENTS),
  runId: z.string().nullable(),
  status: z.enum(DELIVERY_STATUSES),
  attempts: z.number().int(),
  nextAttemptAt: epoch.nullable().describe('when a pending delivery is tried next'),
  lastStatus: z.number().int().nullable(),
  lastError: z.string().nullable(),
  payload: z.unknown(),
  createdAt: epoch,
  deliveredAt: epoch.nullable(),
});

export const webhooksSchema = z.strictObject({ webhooks: z.array(webhookSchema) });
export const webhookAnswerSchema = z.strictObject({ webhook: webhookSchema });
export const webhookAddedSchema = z.strictObject({
  webhook: webhookSchema.extend({ secret: z.string().describe('shown this once: sign checks use it') }),
});
export const webhookDeletedSchema = z.strictObject({ id: z.string(), deleted: z.literal(true) });
export const deliveriesSchema = z.strictObject({ deliveries: z.array(deliverySchema) });
export const deliveryAnswerSchema = z.strictObject({ delivery: deliverySchema });
