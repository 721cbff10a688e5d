/**
 * A model call made without the gateway, reported by the step that made it (ctx.recordUsage in a workflow,
 * POST /api/v1/checkpoint/usage from an outside client), so the run's ledger (ledger.ts) counts it beside the
 * gateway's. Its report is checked here, once, for both: whole token counts ≥ 0, a model named, a cost ≥ 0 when
 * given; when not given, the price table prices it as it would a gateway call.
 *
 * Each report is keyed by the step's idempotency key, the claim's attempt and its place among the attempt's
 * reports (`<step key>:usage:<attempt>:<n>`, n from 0): the same report sent again writes over itself, and an
 * attempt that failed or died after its call keeps its report beside the next attempt's, since both calls were
 * paid for (the gateway's ledger counts a failed attempt's call the same way).
 */
import { z } from 'zod';
import { storableText } from '../domain/text';
import { InvalidInputError } from '../errors';
import type { ModelCallStore, RecordedModelUsage } from '../store/contract';
import { costOf, type PriceTable } from './prices';

/** Token counts fit PostgreSQL's integer column. */
const tokens = z
  .number({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a number') })
  .int('must be a whole number')
  .min(0, 'must be ≥ 0')
  .max(2_147_483_647, 'must be < 2^31');

/** The fields of a report, as ctx.recordUsage takes them and the protocol's usage body carries them. */
export const usageFields = {
  model: z
    .string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') })
    .min(1, 'must not be empty')
    .max(200, 'must be at most 200 characters')
    .superRefine(storableText),
  inputTokens: tokens,
  outputTokens: tokens,
  /** Of the input tokens, those the provider served from its prompt cache. */
  cachedTokens: tokens.optional(),
  costUsd: z
    .number({ error: 'must be a number' })
    .min(0, 'must be ≥ 0')
    .max(1e9, 'must be at most 1e9')
    .refine(Number.isFinite, 'must be finite')
    .optional(),
};

/** Cached tokens are part of the input tokens: more of them than of those is a miscount. */
export function cachedWithinInput(value: { inputTokens: number; cachedTokens?: number }, ctx: z.RefinementCtx): void {
  if (value.cachedTokens !== undefined && value.cachedTokens > value.inputTokens)
    ctx.addIssue({
      code: 'custom',
      path: ['cachedTokens'],
      message: `must be at most inputTokens (${value.inputTokens}): cached tokens are part of the input`,
    });
}

const usageReport = z.strictObject(usageFields).superRefine(cachedWithinInput);

export type UsageReport = z.input<typeof usageReport>;

/** The report checked, or InvalidInputError naming its first bad field (`<where>: inputTokens must be …`). */
export function checkUsage(raw: unknown, where: string): z.output<typeof usageReport> {
  const parsed = usageReport.safeParse(raw);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const field = issue.path.join('.');
  throw new InvalidInputError(
    `${where}: ${field ? `${field} ${issue.message}` : 'takes { model, inputTokens, outputTokens, cachedTokens?, costUsd? }'}`,
  );
}

/** The key of the nth report of an attempt of a step. */
export const usageKey = (at: Pick<UsageAt, 'stepKey' | 'attempt' | 'n'>) => `${at.stepKey}:usage:${at.attempt}:${at.n}`;

/** Where a report goes: the run, the step (null when unnumbered), its key and its place among the step's reports. */
export interface UsageAt {
  runId: string;
  step: number | null;
  stepKey: string;
  /** The claim's attempt: each attempt's reports are its own. */
  attempt: number;
  n: number;
}

/** The row a checked report becomes: its cost as given, else by the price table (null: the model is not priced). */
export function recordedUsage(
  at: UsageAt,
  usage: z.output<typeof usageReport>,
  prices: PriceTable,
): RecordedModelUsage {
  const counted = {
    inputTokens: usage.inputTokens,
    outputTokens: usage.outputTokens,
    cachedTokens: usage.cachedTokens ?? 0,
  };
  return {
    idemKey: usageKey(at),
    runId: at.runId,
    step: at.step,
    model: usage.model,
    ...counted,
    costUsd: usage.costUsd ?? costOf(prices, usage.model, counted),
  };
}

export function recordUsage(
  store: Pick<ModelCallStore, 'recordModelUsage'>,
  prices: PriceTable,
  at: UsageAt,
  usage: z.output<typeof usageReport>,
): Promise<void> {
  return store.recordModelUsage(recordedUsage(at, usage, prices));
}
