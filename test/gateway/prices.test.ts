/**
 * The price table (lib/gateway/prices.ts): the shipped one is dated and prices by exact name or the longest
 * prefix; a user's file replaces it; a file that is not a table is refused naming the file and the field.
 */
import { writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { costOf, loadPriceTable } from '../../lib/gateway/prices';
import { tempDir } from '../support/tmp';

describe('the price table', () => {
  it('ships dated, and prices a dated model name by its family, cached input at its own rate', () => {
    const table = loadPriceTable(undefined);
    expect(table.dated).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    const rates = table.models['gpt-4o-mini']!;
    const cost = costOf(table, 'gpt-4o-mini-2024-07-18', { inputTokens: 1000, outputTokens: 100, cachedTokens: 400 });
    expect(cost).toBeCloseTo((600 * rates.input + 400 * rates.cachedInput! + 100 * rates.output) / 1e6, 12);
    expect(costOf(table, 'a-model-nobody-prices', { inputTokens: 5, outputTokens: 5, cachedTokens: 0 })).toBeNull();
  });

  it("is replaced by the user's file, and a bad file is refused naming it and the field", () => {
    const dir = tempDir('waybill-prices-');
    const own = dir.file('prices.json');
    writeFileSync(own, JSON.stringify({ dated: '2030-01-01', models: { house: { input: 1, output: 2 } } }));
    const table = loadPriceTable(own);
    expect(costOf(table, 'house', { inputTokens: 1_000_000, outputTokens: 1_000_000, cachedTokens: null })).toBe(3);
    expect(costOf(table, 'gpt-4o', { inputTokens: 1, outputTokens: 1, cachedTokens: null })).toBeNull();
    const bad = dir.file('bad.json');
    writeFileSync(bad, JSON.stringify({ dated: '2030-01-01', models: { house: { input: -1, output: 2 } } }));
    expect(() => loadPriceTable(bad)).toThrow(
      `WAYBILL_GATEWAY_PRICES: ${bad} is not a price table: models.house.input`,
    );
    const broken = dir.file('broken.json');
    writeFileSync(broken, '{ not json');
    expect(() => loadPriceTable(broken)).toThrow(`WAYBILL_GATEWAY_PRICES: cannot read ${broken} as JSON`);
  });
});
