/**
 * What a schedule is, checked once: the form `defineWorkflow({ schedules })` takes, and the operator's
 * (lib/control/schedules.ts). Every refusal names its field; a cron expression croner cannot read, or a time
 * zone this runtime does not know, is refused before anything is written.
 */
import { z } from 'zod';
import { CATCH_UP_POLICIES, OVERLAP_POLICIES } from '../../store/contract';
import { cronProblem, timeZoneProblem } from './cron';

/** Room left in a run id for `:<tick ISO>` (`:2026-01-01T00:00:00Z`, 21 characters). */
export const SCHEDULE_NAME_MAX = 64;
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

export const scheduleFields = z
  .object({
    name: z
      .string({ error: 'must be a string' })
      .min(1, 'must not be empty')
      .max(SCHEDULE_NAME_MAX, `must be at most ${SCHEDULE_NAME_MAX} characters`)
      .regex(NAME, 'letters, digits and . _ - only, starting with a letter or digit'),
    cron: z
      .string({ error: 'must be a string' })
      .min(1, 'must not be empty')
      .max(200, 'must be at most 200 characters'),
    timeZone: z.string({ error: 'must be a string' }).default('UTC'),
    input: z.unknown().default({}),
    overlap: z.enum(OVERLAP_POLICIES, { error: `must be one of ${OVERLAP_POLICIES.join(', ')}` }).default('skip'),
    catchUp: z.enum(CATCH_UP_POLICIES, { error: `must be one of ${CATCH_UP_POLICIES.join(', ')}` }).default('latest'),
    catchUpCap: z
      .number({ error: 'must be a number' })
      .int('must be a whole number')
      .min(1, 'must be at least 1')
      .max(1000, 'must be at most 1000')
      // null, as a schedule's view shows a cap it does not read: none given.
      .nullish(),
  })
  .strict()
  .superRefine(checkSchedule);

/** The cap of a schedule given none, for catch-up `all`. */
export const DEFAULT_CATCH_UP_CAP = 10;

/**
 * A catch-up cap bounds how many missed ticks `all` fires; `latest` fires one and `none` none, so a cap given with
 * them would be kept and never read: refused instead, declared or added.
 */
export const CAP_ONLY_WITH_ALL = 'only with catch-up all (latest fires one missed tick, none fires none)';

/**
 * The checks of a schedule's fields together, which every schedule schema runs (this one, the operator's in
 * lib/control/schedules.ts): checkWhen, and a cap only with catch-up `all`.
 */
export function checkSchedule(
  s: { cron: string; timeZone: string; catchUp: string; catchUpCap?: number | null | undefined },
  ctx: z.RefinementCtx,
): void {
  checkWhen(s, ctx);
  if (s.catchUpCap != null && s.catchUp !== 'all')
    ctx.addIssue({ code: 'custom', path: ['catchUpCap'], message: CAP_ONLY_WITH_ALL });
}

/** A time zone this runtime knows, then a cron expression it reads in that zone. */
function checkWhen(s: { cron: string; timeZone: string }, ctx: z.RefinementCtx): void {
  const zone = timeZoneProblem(s.timeZone);
  if (zone) {
    ctx.addIssue({ code: 'custom', path: ['timeZone'], message: zone });
    return;
  }
  const cron = cronProblem(s.cron, s.timeZone);
  if (cron) ctx.addIssue({ code: 'custom', path: ['cron'], message: cron });
}

export type ScheduleSpec = z.infer<typeof scheduleFields>;
/** What defineWorkflow takes: the spec, its defaults optional. */
export type ScheduleDeclaration = z.input<typeof scheduleFields>;

/** `field: problem; field: problem`, for the errors that carry a schedule's refusal. */
export function scheduleIssues(error: z.ZodError): string {
  return error.issues.map((i) => `${i.path.join('.') || 'schedule'}: ${i.message}`).join('; ');
}
