/**
 * The few visual pieces every page shares, so spacing, type and colour stay one system.
 */
import type { ReactNode } from 'react';
import type { RunFigures } from '@/lib/control/figures';
import { count } from '@/lib/count';
import { inDateRange, OUT_OF_RANGE } from './time';

/** Tone classes (globals.css) by status: short names, because every row of the runs list carries a badge. */
const STATUS_TONE: Record<string, string> = {
  queued: 'wb-tone-zinc',
  running: 'wb-tone-blue',
  paused: 'wb-tone-amber',
  waiting: 'wb-tone-amber',
  completed: 'wb-tone-emerald',
  failed: 'wb-tone-red',
  cancelled: 'wb-tone-zinc-quiet',
  rejected: 'wb-tone-zinc-quiet',
  idle: 'wb-tone-zinc',
  orphaned: 'wb-tone-orange',
  alive: 'wb-tone-emerald',
  silent: 'wb-tone-red',
  stopped: 'wb-tone-zinc-quiet',
  // Webhooks and their deliveries.
  active: 'wb-tone-emerald',
  pending: 'wb-tone-amber',
  delivered: 'wb-tone-emerald',
};

export function Badge({ value, testId }: { value: string; testId?: string }) {
  return (
    <span data-testid={testId} className={`wb-badge ${STATUS_TONE[value] ?? STATUS_TONE.queued}`}>
      {value}
    </span>
  );
}

/** A run's progress bar from its figures (lib/control/figures.ts): done/total, and the figures' percent. */
export function ProgressBar({
  figures,
  label,
}: {
  figures: Pick<RunFigures, 'done' | 'total' | 'percent'>;
  label?: string;
}) {
  const { done, total, percent } = figures;
  return (
    <div className="wb-progress">
      <div
        className="wb-progress-track"
        role="progressbar"
        aria-label={label ?? 'progress'}
        aria-valuemin={0}
        aria-valuemax={total ?? undefined}
        aria-valuenow={done}
      >
        <div className="wb-progress-fill" style={{ width: `${percent ?? 0}%` }} />
      </div>
      <span className="wb-progress-text">
        {total ? `${count(done)}/${count(total)}` : percent === 100 ? `${count(done)} done` : `step ${count(done)}`}
      </span>
    </div>
  );
}

export function Card({
  title,
  children,
  testId,
  actions,
}: {
  title?: string;
  children: ReactNode;
  testId?: string;
  actions?: ReactNode;
}) {
  return (
    <section
      data-testid={testId}
      className="rounded-lg border border-zinc-200 bg-white p-4 shadow-sm dark:border-zinc-800 dark:bg-zinc-900"
    >
      {(title || actions) && (
        <div className="mb-3 flex items-center justify-between gap-2">
          {title && <h2 className="text-sm font-semibold text-zinc-700 dark:text-zinc-300">{title}</h2>}
          {actions}
        </div>
      )}
      {children}
    </section>
  );
}

export function Stat({ label, value, testId }: { label: string; value: ReactNode; testId?: string }) {
  return (
    <div
      data-testid={testId}
      className="rounded-lg border border-zinc-200 bg-white px-4 py-3 dark:border-zinc-800 dark:bg-zinc-900"
    >
      <div className="text-xs text-zinc-500 dark:text-zinc-400">{label}</div>
      <div className="mt-1 text-xl font-semibold tabular-nums">{typeof value === 'number' ? count(value) : value}</div>
    </div>
  );
}

export function EmptyState({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div className="rounded-lg border border-dashed border-zinc-300 px-6 py-10 text-center dark:border-zinc-700">
      <p className="font-medium">{title}</p>
      {children && <div className="mt-2 text-sm text-zinc-600 dark:text-zinc-400">{children}</div>}
    </div>
  );
}

/** A button's look: wb-btn and its tone are in globals.css, short names for what every claim row repeats. */
export const buttonClass = (tone: 'primary' | 'default' | 'danger' = 'default') => `wb-btn wb-btn-${tone}`;

/** "3s ago", "in 12s": relative to now, for times in epoch seconds. */
export function relative(epochSeconds: number | null | undefined, nowSeconds = Date.now() / 1000): string {
  if (epochSeconds === null || epochSeconds === undefined) return '—';
  if (!inDateRange(epochSeconds)) return OUT_OF_RANGE;
  const delta = epochSeconds - nowSeconds;
  const abs = Math.abs(delta);
  const text =
    abs < 60
      ? `${Math.round(abs)}s`
      : abs < 3600
        ? `${Math.round(abs / 60)}m`
        : abs < 86400
          ? `${Math.round(abs / 3600)}h`
          : `${Math.round(abs / 86400)}d`;
  return delta >= 0 ? `in ${text}` : `${text} ago`;
}
