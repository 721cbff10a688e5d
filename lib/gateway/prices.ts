/**
 * What a model call cost, by a price table: the shipped one (prices-shipped.ts, dated, so a reader knows how old
 * its prices are) or the user's own (WAYBILL_GATEWAY_PRICES), in the same shape. A model is priced by its
 * exact name, else by the longest table name it starts with (`gpt-4o-mini-2024-07-18` is `gpt-4o-mini`).
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { InvalidInputError } from '../errors';
import { SHIPPED_PRICES } from './prices-shipped';

const rate = z.number().min(0);

export const priceTableSchema = z.object({
  dated: z.string().min(1),
  unit: z.literal('USD per million tokens').optional(),
  models: z.record(z.string().min(1), z.strictObject({ input: rate, output: rate, cachedInput: rate.optional() })),
});

export type PriceTable = z.infer<typeof priceTableSchema>;

export interface Tokens {
  inputTokens: number | null;
  outputTokens: number | null;
  cachedTokens: number | null;
}

/** The table at `path`, or the shipped one; a file that is not a table is refused naming it and the field. */
export function loadPriceTable(path: string | undefined): PriceTable {
  if (path === undefined) return priceTableSchema.parse(SHIPPED_PRICES);
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new InvalidInputError(`WAYBILL_GATEWAY_PRICES: cannot read ${path} as JSON: ${(error as Error).message}`);
  }
  const parsed = priceTableSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new InvalidInputError(
      `WAYBILL_GATEWAY_PRICES: ${path} is not a price table: ${issue.path.join('.') || '(top)'} ${issue.message}`,
    );
  }
  return parsed.data;
}

const readTables = new Map<string | undefined, PriceTable>();

/**
 * The table at `path` (WAYBILL_GATEWAY_PRICES, else the shipped one), read once per process: what a server that
 * prices many calls (the dashboard's gateway routes, its usage reports) looks up at each one.
 */
export function priceTableAt(path: string | undefined): PriceTable {
  let table = readTables.get(path);
  if (!table) readTables.set(path, (table = loadPriceTable(path)));
  return table;
}

/** USD, or null when the model is not in the table or the call reported no tokens. */
export function costOf(table: PriceTable, model: string | null, tokens: Tokens): number | null {
  if (model === null || (tokens.inputTokens === null && tokens.outputTokens === null)) return null;
  const name =
    model in table.models
      ? model
      : Object.keys(table.models)
          .filter((m) => model.startsWith(m))
          .sort((a, b) => b.length - a.length)[0];
  const price = name === undefined ? undefined : table.models[name];
  if (!price) return null;
  const cached = tokens.cachedTokens ?? 0;
  const fresh = Math.max(0, (tokens.inputTokens ?? 0) - cached);
  const usd =
    fresh * price.input + cached * (price.cachedInput ?? price.input) + (tokens.outputTokens ?? 0) * price.output;
  return usd / 1_000_000;
}
