'use client';
/**
 * The run's budget for model calls through the gateway: what it has spent of it, and for an operator a field to
 * set it. A run the gateway paused at its budget shows why; raised, the Resume button continues it.
 */
import { useState, useTransition } from 'react';
import { setBudgetAction } from '@/app/actions/runs';
import { buttonClass } from '@/app/components/ui';

const dollars = (usd: number) => `$${usd.toLocaleString('en-US', { maximumFractionDigits: 6 })}`;

export function BudgetForm({
  runId,
  budgetUsd,
  spentUsd,
  paused,
  operator,
}: {
  runId: string;
  budgetUsd: number | null;
  spentUsd: number;
  paused: boolean;
  operator: boolean;
}) {
  const [pending, startTransition] = useTransition();
  const [amount, setAmount] = useState(budgetUsd === null ? '' : String(budgetUsd));
  const [result, setResult] = useState<{ ok: boolean; message: string } | null>(null);
  const reached = budgetUsd !== null && spentUsd >= budgetUsd;

  function submit(event: React.FormEvent) {
    event.preventDefault();
    startTransition(async () => {
      const outcome = await setBudgetAction({ runId, budgetUsd: amount });
      const field = outcome.ok ? undefined : outcome.errors?.budgetUsd?.[0];
      setResult({ ok: outcome.ok, message: field ? `budget ${field}` : outcome.message });
    });
  }

  return (
    <div data-testid="run-budget" className="flex flex-col items-start gap-1 text-sm sm:items-end">
      <p className="text-zinc-600 dark:text-zinc-400">
        Spent <span data-testid="run-budget-spent">{dollars(spentUsd)}</span> of{' '}
        <span data-testid="run-budget-limit">{budgetUsd === null ? 'no budget' : dollars(budgetUsd)}</span>
      </p>
      {reached && paused && (
        <p data-testid="run-budget-reached" className="font-medium text-amber-800 dark:text-amber-300">
          Paused: budget reached. Raise the budget, then resume.
        </p>
      )}
      {operator && (
        <form onSubmit={submit} className="flex items-center gap-1" aria-label="Set the run's budget">
          <label htmlFor="run-budget-input" className="sr-only">
            Budget in US dollars
          </label>
          <input
            id="run-budget-input"
            data-testid="run-budget-input"
            inputMode="decimal"
            placeholder="USD"
            value={amount}
            onChange={(event) => setAmount(event.target.value)}
            maxLength={32}
            aria-invalid={result?.ok === false}
            aria-describedby="run-budget-message"
            className="w-24 rounded-md border border-zinc-300 bg-white px-2 py-1 text-xs dark:border-zinc-600 dark:bg-zinc-950"
          />
          <button
            type="submit"
            data-testid="run-budget-submit"
            disabled={pending}
            className={`${buttonClass('default')} py-1 text-xs`}
          >
            {pending ? 'Setting…' : 'Set budget'}
          </button>
        </form>
      )}
      <p
        id="run-budget-message"
        data-testid="run-budget-message"
        role="status"
        className={`empty:sr-only ${result?.ok === false ? 'text-red-700 dark:text-red-400' : 'text-zinc-600 dark:text-zinc-400'}`}
      >
        {result?.message}
      </p>
    </div>
  );
}
