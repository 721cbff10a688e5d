/**
 * Axis and tooltip text for the run charts. A step of a few hundred microseconds is common (a cached model
 * call, a local write): rounding to whole milliseconds turned the axis into "1 ms, 1 ms, 0 ms, 0 ms". The
 * precision here follows the value, so neighbouring ticks of any nice step read differently.
 */

/** 0.25 → "250 µs", 1.25 → "1.25 ms", 12.5 → "12.5 ms", 600 → "600 ms", 1500 → "1.5 s", 42000 → "42 s". */
export function formatMs(ms: number): string {
  if (!Number.isFinite(ms)) return '—';
  const abs = Math.abs(ms);
  if (abs === 0) return '0';
  if (abs < 1) return `${trim((ms * 1000).toFixed(abs < 0.01 ? 1 : 0))} µs`;
  if (abs < 10) return `${trim(ms.toFixed(2))} ms`;
  if (abs < 100) return `${trim(ms.toFixed(1))} ms`;
  if (abs < 1000) return `${Math.round(ms)} ms`;
  if (abs < 10_000) return `${trim((ms / 1000).toFixed(2))} s`;
  return `${trim((ms / 1000).toFixed(0))} s`;
}

function trim(fixed: string): string {
  return fixed.includes('.') ? fixed.replace(/\.?0+$/, '') : fixed;
}

/**
 * The y axis's width in pixels for these values: room for the longest label recharts may draw (its ticks are
 * nice numbers up to a little past the largest value), at 11 px text, so no label is clipped.
 */
export function axisWidth(values: number[], charPx = 6.6, minPx = 40): number {
  const max = values.reduce((m, v) => (Number.isFinite(v) && v > m ? v : m), 0);
  // Candidates: the largest value rounded up to a nice number, and fractions of it that ticks land on.
  const top = niceCeil(max);
  const labels = [top, top * 0.75, top * 0.5, top * 0.25, top * 0.2, top * 0.8, top * 0.6, top * 0.4].map(formatMs);
  const longest = Math.max(...labels.map((l) => l.length));
  return Math.max(minPx, Math.ceil(longest * charPx + 12));
}

function niceCeil(value: number): number {
  if (value <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  const step = [1, 2, 2.5, 5, 10].find((s) => s * power >= value) ?? 10;
  return step * power;
}
