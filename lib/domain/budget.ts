/**
 * What a run's budget may be (USD its model calls may spend through the gateway): a finite number above zero
 * and at most a million. One rule for defineWorkflow's default, a start's override and a raise, from the
 * dashboard, the API or the CLI; a zero or negative budget would refuse every call, which pause already says.
 */
import { z } from 'zod';

export const BUDGET_MAX_USD = 1_000_000;

export const budgetUsdSchema = z
  .number({ error: 'must be a number of US dollars' })
  .refine((usd) => Number.isFinite(usd), 'must be a finite number of US dollars')
  .refine((usd) => usd > 0, 'must be more than 0 US dollars')
  .refine((usd) => usd <= BUDGET_MAX_USD, `must be at most ${BUDGET_MAX_USD} US dollars`);

/** Why `usd` is not a budget, as "<field> <problem>", or undefined when it is one. */
export function budgetProblem(field: string, usd: unknown): string | undefined {
  const parsed = budgetUsdSchema.safeParse(usd);
  return parsed.success ? undefined : `${field} ${parsed.error.issues[0]!.message}`;
}
