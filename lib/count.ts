/**
 * How Waybill writes a count, on every page and in the CLI's sentences: digits grouped the same way
 * everywhere ("20,000", never "20000" beside "1,648×"), and a noun that agrees with it ("1 run", "2 runs").
 */
const GROUPED = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });

/** 20000 → "20,000"; a fraction is rounded to a whole count. */
export function count(n: number): string {
  return GROUPED.format(n);
}

/** (1, 'run') → "1 run", (3, 'run') → "3 runs", (2, 'process', 'processes') → "2 processes". */
export function counted(n: number, noun: string, plural = `${noun}s`): string {
  return `${count(n)} ${n === 1 ? noun : plural}`;
}

/** A count where room is short: 850 → "850", 1,249 → "1.2k", 61,499 → "61k", 3,400,000 → "3.4M". */
export function compact(n: number): string {
  const scaled = (x: number, unit: string) => `${x < 10 ? Number(x.toFixed(1)) : Math.round(x)}${unit}`;
  if (n < 1000) return count(n);
  if (n < 999_500) return scaled(n / 1000, 'k');
  return scaled(n / 1_000_000, 'M');
}
