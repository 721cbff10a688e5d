/**
 * Human output: aligned tables, relative times, and a progress bar redrawn in place on a terminal.
 * Nothing here is used with --json, which prints the data as it is.
 */
import type { RunFigures } from '../control/figures';

/** Columns padded to their widest cell, two spaces apart. */
export function table(headers: string[], rows: (string | number | null)[][]): string {
  const cells = [headers, ...rows.map((row) => row.map((c) => (c === null ? '—' : String(c))))];
  const widths = headers.map((_, i) => Math.max(...cells.map((row) => row[i]?.length ?? 0)));
  return cells
    .map((row) =>
      row
        .map((c, i) => c.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** "name   value" lines, the values aligned. */
export function fields(pairs: [string, string][]): string {
  const width = Math.max(...pairs.map(([name]) => name.length));
  return pairs.map(([name, value]) => `${name.padEnd(width)}  ${value}`).join('\n');
}

/**
 * "3s ago", "in 12s", "now"; epoch seconds against the clock in milliseconds. No time, 0 or less (a column an
 * outside client left unset) and what is not a number are "—", never "20788d ago".
 */
export function relative(epochSeconds: number | null | undefined, nowMs = Date.now()): string {
  if (epochSeconds === null || epochSeconds === undefined || !Number.isFinite(epochSeconds) || epochSeconds <= 0)
    return '—';
  const delta = Math.round(epochSeconds - nowMs / 1000);
  if (delta === 0) return 'now';
  const abs = Math.abs(delta);
  const span =
    abs < 60
      ? `${abs}s`
      : abs < 3600
        ? `${Math.floor(abs / 60)}m`
        : abs < 86_400
          ? `${Math.floor(abs / 3600)}h`
          : `${Math.floor(abs / 86_400)}d`;
  return delta < 0 ? `${span} ago` : `in ${span}`;
}

export function truncate(text: string | null, max: number): string | null {
  if (text === null) return null;
  const line = text.replace(/\s+/g, ' ');
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/** A run's progress from its figures (lib/control/figures.ts): its bar, or with no total "N done" / "step N". */
export function progressBar(figures: Pick<RunFigures, 'done' | 'total' | 'percent'>, width = 24): string {
  if (figures.total !== null && figures.total > 0) return bar(figures.done, figures.total, width);
  return figures.percent === 100 ? `${figures.done} done` : `step ${figures.done}`;
}

/** "[██████░░░░░░]  6/12  50%"; with no known total, just the step. */
export function bar(step: number, total: number | null, width = 24): string {
  if (!total || total <= 0) return `step ${step}`;
  const ratio = Math.min(1, Math.max(0, step / total));
  const filled = Math.round(ratio * width);
  return `[${'█'.repeat(filled)}${'░'.repeat(width - filled)}] ${step}/${total} ${String(Math.floor(ratio * 100)).padStart(3)}%`;
}

/**
 * A block of lines at the bottom of a terminal, redrawn in place. Other output (a worker's log lines) goes
 * through write(), which lifts the block, prints, and draws it again, so the two never tear each other.
 */
export class LiveBlock {
  private lines: string[] = [];

  constructor(private readonly stream: NodeJS.WriteStream) {}

  update(lines: string[]): void {
    this.erase();
    // A line wider than the terminal wraps and would throw the cursor arithmetic off: cut it.
    const width = Math.max(20, (this.stream.columns ?? 80) - 1);
    this.lines = lines.map((l) => (l.length > width ? `${l.slice(0, width - 1)}…` : l));
    this.draw();
  }

  write(text: string): void {
    this.erase();
    this.stream.write(text);
    this.draw();
  }

  /** Leaves the last lines on screen as plain output. */
  done(): void {
    this.lines = [];
  }

  private erase(): void {
    if (this.lines.length > 0) this.stream.write(`\x1b[${this.lines.length}A\r\x1b[J`);
  }

  private draw(): void {
    for (const line of this.lines) this.stream.write(`${line}\n`);
  }
}
