/**
 * The price table the gateway ships with, dated: list prices as the providers published them on that day, in
 * USD per million tokens. Replace it with WAYBILL_GATEWAY_PRICES (a JSON file of this shape) when they change
 * or when your contract differs.
 */
export const SHIPPED_PRICES = {
  dated: '2026-11-01',
  unit: 'USD per million tokens',
  models: {
    'gpt-4o': {
      input: 2.5,
      cachedInput: 1.25,
      output: 10,
    },
    'gpt-4o-mini': {
      input: 0.15,
      cachedInput: 0.075,
      output: 0.6,
    },
    'gpt-4.1': {
      input: 2,
      cachedInput: 0.5,
      output: 8,
    },
    'gpt-4.1-mini': {
      input: 0.4,
      cachedInput: 0.1,
      output: 1.6,
    },
    'gpt-5': {
      input: 1.25,
      cachedInput: 0.125,
      output: 10,
    },
    'gpt-5-mini': {
      input: 0.25,
      cachedInput: 0.025,
      output: 2,
    },
    'text-embedding-3-small': {
      input: 0.02,
      output: 0,
    },
    'text-embedding-3-large': {
      input: 0.13,
      output: 0,
    },
    'claude-sonnet-4-5': {
      input: 3,
      cachedInput: 0.3,
      output: 15,
    },
    'claude-haiku-4-5': {
      input: 1,
      cachedInput: 0.1,
      output: 5,
    },
    'claude-opus-4-1': {
      input: 15,
      cachedInput: 1.5,
      output: 75,
    },
  },
} as const;
