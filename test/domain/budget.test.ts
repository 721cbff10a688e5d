/** The one rule for a run's budget (lib/domain/budget.ts): what passes, and a refusal that names the field. */
import { describe, expect, it } from 'vitest';
import { BUDGET_MAX_USD, budgetProblem } from '../../lib/domain/budget';

describe('a run budget', () => {
  it('is a finite number of dollars above 0 and at most a million', () => {
    for (const usd of [0.0001, 1, 2.5, BUDGET_MAX_USD]) expect(budgetProblem('budgetUsd', usd)).toBeUndefined();
  });

  it('refuses anything else, naming the field', () => {
    expect(budgetProblem('budgetUsd', 0)).toBe('budgetUsd must be more than 0 US dollars');
    expect(budgetProblem('budgetUsd', -1)).toBe('budgetUsd must be more than 0 US dollars');
    expect(budgetProblem('budgetUsd', BUDGET_MAX_USD + 1)).toBe('budgetUsd must be at most 1000000 US dollars');
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, '5', null])
      expect(budgetProblem('--budget', bad)).toMatch(/^--budget must be a/);
  });
});
