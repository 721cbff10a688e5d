/**
 * The ledger's sums in SQL, written once for both backends: a complete call's tokens and cost, grouped by
 * model, over every call (the metrics scrape) or a workflow's runs. The rule is the ledger's
 * (lib/gateway/ledger.ts): a call still pending counts nothing, a retired one counts (it was paid), a cost of
 * NULL is an unpriced call. Models in byte order, an unknown (NULL) one last, alike on both.
 */
import type { Dialect } from '../contract';
import { DIALECTS } from './dialects';

export function modelUsageSql(dialect: Dialect, byWorkflow: boolean): string {
  const { int, float } = DIALECTS[dialect];
  const workflow = dialect === 'sqlite' ? '@workflow' : '$1';
  const sum = (column: string) => `coalesce(sum(${column}), 0)${float}`;
  return `SELECT model, count(*)${int} AS calls,
    ${sum('input_tokens')} AS "inputTokens", ${sum('output_tokens')} AS "outputTokens",
    ${sum('cached_tokens')} AS "cachedTokens", ${sum('cost_usd')} AS "costUsd",
    coalesce(sum(CASE WHEN cost_usd IS NULL THEN 1 ELSE 0 END), 0)${int} AS unpriced
    FROM model_calls
    WHERE state = 'complete'${byWorkflow ? ` AND run_id IN (SELECT id FROM runs WHERE workflow = ${workflow})` : ''}
    GROUP BY model ORDER BY model IS NULL, model${dialect === 'postgres' ? ' COLLATE "C"' : ''}`;
}
