/**
 * The model calls the step made through the gateway (lib/control/usage ofStep): each call's model, tokens and
 * cost, and their sum. A call still asking upstream shows as such; one a rerun retired stays listed (it was
 * paid), marked. The page's live refresh re-reads it. Shown only for steps that made a call.
 */
import { Card } from '@/app/components/ui';
import type { StepUsage } from '@/lib/control/usage';
import { tokens, usd } from '../../usage-format';

export function StepCallsCard({ usage }: { usage: StepUsage }) {
  if (usage.calls.length === 0) return null;
  const term = 'text-zinc-500 dark:text-zinc-400';
  const total = usage.usage;
  return (
    <Card title={`Model calls (${usage.calls.length})`} testId="step-model-calls">
      <table className="w-full text-left text-sm">
        <thead className={`text-xs ${term}`}>
          <tr>
            <th className="py-1 pr-3">#</th>
            <th className="pr-3">Model</th>
            <th className="pr-3 text-right">In</th>
            <th className="pr-3 text-right">Cached</th>
            <th className="pr-3 text-right">Out</th>
            <th className="text-right">Cost</th>
          </tr>
        </thead>
        <tbody className="divide-y divide-zinc-100 tabular-nums dark:divide-zinc-800">
          {usage.calls.map((c, i) => (
            <tr key={c.id} data-testid="step-model-call" data-state={c.state}>
              <td className="py-1 pr-3">{i + 1}</td>
              <td className="break-all pr-3">
                {c.model ?? <span className={term}>not named</span>}
                <span className={`ml-1 text-xs ${term}`}>
                  {c.api}
                  {c.state === 'pending' ? ', in flight' : ''}
                  {c.retiredAt !== null ? ', retired by a rerun' : ''}
                </span>
              </td>
              <td className="pr-3 text-right">{tokens(c.inputTokens)}</td>
              <td className="pr-3 text-right">{tokens(c.cachedTokens)}</td>
              <td className="pr-3 text-right">{tokens(c.outputTokens)}</td>
              <td className="text-right" data-testid="step-model-call-cost">
                {c.state === 'pending' ? '—' : c.costUsd === null ? 'unpriced' : usd(c.costUsd)}
              </td>
            </tr>
          ))}
        </tbody>
        <tfoot className="border-t border-zinc-200 font-medium tabular-nums dark:border-zinc-700">
          <tr data-testid="step-model-calls-total">
            <td className="py-1 pr-3" colSpan={2}>
              Total, {total.calls.toLocaleString('en-US')} complete call{total.calls === 1 ? '' : 's'}
              {total.unpriced > 0 && (
                <span className={`ml-1 text-xs font-normal ${term}`}>({total.unpriced} unpriced)</span>
              )}
            </td>
            <td className="pr-3 text-right">{tokens(total.inputTokens)}</td>
            <td className="pr-3 text-right">{tokens(total.cachedTokens)}</td>
            <td className="pr-3 text-right">{tokens(total.outputTokens)}</td>
            <td className="text-right">{usd(total.costUsd)}</td>
          </tr>
        </tfoot>
      </table>
    </Card>
  );
}
