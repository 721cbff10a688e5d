/**
 * The bodies, path parameters and answers of /api/v1/schedules. The fields' rules are lib/control/schedules'
 * (the engine's one schedule spec), so the API, the CLI and the dashboard refuse alike.
 */
import { z } from 'zod';
import { addInput, nameInput } from '../control/schedules';
import { CATCH_UP_POLICIES, OVERLAP_POLICIES } from '../store/contract';

export const addScheduleBody = addInput;
export const scheduleNameParam = nameInput.shape.name;
export const scheduleActionBody = z.strictObject({ reason: nameInput.shape.reason }).optional();
export const SCHEDULE_ACTIONS = ['pause', 'resume'] as const;
export const scheduleActionParam = z.enum(SCHEDULE_ACTIONS);

const epoch = z.number().describe('epoch seconds');

export const scheduleSchema = z.strictObject({
  name: z.string(),
  workflow: z.string(),
  cron: z.string(),
  timeZone: z.string(),
  input: z.unknown(),
  overlap: z.enum(OVERLAP_POLICIES),
  catchUp: z.enum(CATCH_UP_POLICIES),
  catchUpCap: z
    .number()
    .int()
    .nullable()
    .describe('how many missed ticks catch-up all fires at most; null with another catch-up'),
  paused: z.boolean(),
  source: z.enum(['definition', 'operator']),
  nextFireAt: epoch.nullable().describe('the next tick; null while paused or finished'),
  finished: z.boolean().describe('its cron expression has no tick to come: it fires no more'),
  lastTickAt: epoch.nullable(),
  lastRunId: z.string().nullable(),
  lastRuns: z.array(z.strictObject({ id: z.string(), status: z.string(), createdAt: epoch })),
  createdAt: epoch,
  updatedAt: epoch,
});

export const schedulesSchema = z.strictObject({ schedules: z.array(scheduleSchema) });
export const scheduleAnswerSchema = z.strictObject({ schedule: scheduleSchema });
export const scheduleDeletedSchema = z.strictObject({ name: z.string(), deleted: z.literal(true) });
