/**
 * What the run's model calls through the gateway cost: calls, tokens in (cached among them) and out, USD and
 * the calls the price table does not price, in total, by step and by model (lib/control/usage, the ledger
 * `waybill inspect` and GET /api/v1/runs/{id}/usage show). The page's live refresh re-reads it, so it grows
 * as calls complete. Shown only for runs that made a call.
 */
import Link from 'next/link';
import type { ReactNode } from 'react';
import { Card, Stat } from '@/app/components/ui';
import type { RunUsage, UsageTotals } from '@/lib/control/usage';
import { tokens, usd } from './usage-format';

export function UsageCard({ runId, ledger }: { runId: string; ledger: RunUsage | null }) {
  if (!ledger || ledger.calls === 0) return null;
  const stepHref = (step: number) => `/runs/${encodeURIComponent(runId)}/steps/${step}`;
  return (
    <Card title="Model usage" testId="model-usage">
      <div className="grid grid-cols-2 gap-3 sm:grid-cols-4">
        <Stat label="Calls" value={ledger.calls} testId="usage-calls" />
        <Stat label="Tokens in" value={tokens(ledger.inputTokens)} testId="usage-input" />
        <Stat label="Tokens out" value={tokens(ledger.outputTokens)} testId="usage-output" />
        <Stat label="Cost" value={usd(ledger.costUsd)} testId="usage-cost" />
      </div>
      <p className="mt-3 text-sm text-zinc-600 dark:text-zinc-400">
        <span data-testid="usage-cached">{tokens(ledger.cachedTokens)}</span> of the input tokens were served from the
        prompt cache.
        {ledger.unpriced > 0 && (
          <span data-testid="usage-unpriced" className="text-amber-800 dark:text-amber-300">
            {' '}
            {ledger.unpriced.toLocaleString('en-US')} call{ledger.unpriced === 1 ? ' is' : 's are'} unpriced (a model
            the price table does not name): the cost leaves {ledger.unpriced === 1 ? 'it' : 'them'} out.
          </span>
        )}
      </p>
      <UsageTable
        testId="usage-by-step"
        label="Step"
        rows={ledger.bySteps.map((s) => ({
          key: String(s.step),
          name:
            s.step === null ? (
              <span className="text-zinc-500 dark:text-zinc-400">no step</span>
            ) : (
              <Link
                prefetch={false}
                href={stepHref(s.step)}
                className="text-blue-700 hover:underline dark:text-blue-400"
              >
                {s.step}
              </Link>
            ),
          usage: s.usage,
        }))}
      />
      <UsageTable
        testId="usage-by-model"
        label="Model"
        rows={ledger.byModel.map((m) => ({
          key: m.model ?? '',
          name: m.model ?? <span className="text-zinc-500 dark:text-zinc-400">not named</span>,
          usage: m.usage,
        }))}
      />
    </Card>
  );
}

function UsageTable({
  testId,
  label,
  rows,
}: {
  testId: string;
  label: string;
  rows: { key: string; name: ReactNode; usage: UsageTotals }[];
}) {
  return (
    <table data-testid={testId} className="mt-4 w-full text-left text-sm">
      <thead className="text-xs text-zinc-500 dark:text-zinc-400">
        <tr>
          <th className="py-1 pr-3">{label}</th>
          <th className="pr-3 text-right">Calls</th>
          <th className="pr-3 text-right">In</th>
          <th className="pr-3 text-right">Cached</th>
          <th className="pr-3 text-right">Out</th>
          <th className="text-right">Cost</th>
        </tr>
      </thead>
      <tbody className="divide-y divide-zinc-100 tabular-nums dark:divide-zinc-800">
        {rows.map((r) => (
          <tr key={r.key} data-testid={`${testId}-row`}>
            <td className="break-all py-1 pr-3">{r.name}</td>
            <td className="pr-3 text-right">{tokens(r.usage.calls)}</td>
            <td className="pr-3 text-right">{tokens(r.usage.inputTokens)}</td>
            <td className="pr-3 text-right">{tokens(r.usage.cachedTokens)}</td>
            <td className="pr-3 text-right">{tokens(r.usage.outputTokens)}</td>
            <td className="text-right">
              {r.usage.unpriced === r.usage.calls ? 'unpriced' : usd(r.usage.costUsd)}
              {r.usage.unpriced > 0 && r.usage.unpriced < r.usage.calls && (
                <span className="ml-1 text-xs text-zinc-500 dark:text-zinc-400">+{r.usage.unpriced} unpriced</span>
              )}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
