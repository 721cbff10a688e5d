/**
 * Durations as people write them in flags and settings: `30d`, `12h`, `90m`, `45s`, `2w`. One schema for
 * the CLI and lib/config, so `--older-than` and WAYBILL_PRUNE_OLDER_THAN accept the same text.
 */
import { z } from 'zod';

const UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 } as const;

/** Text → milliseconds; a number with no unit is refused, since `30` could mean anything. */
export const durationSchema = z
  .string()
  .regex(/^\d+(s|m|h|d|w)$/, 'must be a whole number and a unit: s, m, h, d or w (e.g. 30d)')
  .transform((text) => Number(text.slice(0, -1)) * UNIT_MS[text.slice(-1) as keyof typeof UNIT_MS])
  .pipe(z.number().positive('must be more than 0'));

/**
 * Stripe keeps idempotency keys at least 24 hours; so do we by default. A pruned key can no longer
 * deduplicate: a client retrying a step after its key was pruned runs the side effect again.
 */
export const MIN_RETENTION_MS = 24 * 3_600_000;
