/**
 * The few visual pieces every page shares, so spacing, type and colour stay one system.
 */
import type { ReactNode } from 'react';

const STATUS_STYLE: Record<string, string> = {
  queued: 'bg-zinc-100 text-zinc-700 ring-zinc-300 dark:bg-zinc-800 dark:text-zinc-300 dark:ring-zinc-700',
  running: 'bg-blue-50 text-blue-700 ring-blue-200 dark:bg-blue-950 dark:text-blue-300 dark:ring-blue-900',
  paused: 'bg-amber-50 text-amber-800 ring-amber-200 dark:bg-amber-950 dark:text-amber-300 dark:ring-amber-900',
  completed: 'bg-emerald-50 text-emerald-700 ring-emerald-200 dark:bg-emerald-950 dark:text-emerald-300 dark:ring-emerald-900',
  failed: 'bg-red-50 text-red-700 ring-red-200 dark:bg-red-950 dark:text-red-300 dark:ring-red-900',
  cancelled: 'bg-zinc-100 text-zinc-500 ring-zinc-300 dark:bg-zinc-800 dark:text-zinc-400 dark:ring-zinc-700',
  idle: 'bg-zinc-100 text-zinc-600 ring-zinc-300 dark:bg-zinc-800 dark:text-zinc-400 dark:ring-zinc-700',
  orphaned: 'bg-orange-50 text-orange-800 ring-orange-200 dark:bg-orange-950 dark:text-orange-300 dark:ring-orange-900',
  alive: 'bg-emerald-50 text-emerald-700 ring-emerald-200 dark:bg-emerald-950 dark:text-emerald-300 dark:ring-emerald-900',
  silent: 'bg-red-50 text-red-700 ring-red-200 dark:bg-red-950 dark:text-red-300 dark:ring-red-900',
  stopped: 'bg-zinc-100 text-zinc-500 ring-zinc-300 dark:bg-zinc-800 dark:text-zinc-400 dark:ring-zinc-700',
};

export function Badge({ value, testId }: { value: string; testId?: string }) {
  return (
    <span data-testid={testId} className={`inline-flex items-center rounded-full px-2 py-0.5 text-xs font-medium ring-1 ring-inset ${STATUS_STYLE[value] ?? STATUS_STYLE.queued}`}>
      {value}
    </span>
  );
}

export function ProgressBar({ step, total, label }: { step: number; total: number | null; label?: string }) {
  const pct = total ? Math.min(100, Math.round((step / total) * 100)) : null;
  return (
    <div className="flex min-w-32 items-center gap-2">
      <div className="h-2 flex-1 overflow-hidden rounded-full bg-zinc-200 dark:bg-zinc-800" role="progressbar"
        aria-label={label ?? 'progress'} aria-valuemin={0} aria-valuemax={total ?? undefined} aria-valuenow={step}>
        <div className="h-full rounded-full bg-blue-600 transition-[width] dark:bg-blue-500" style={{ width: `${pct ?? 0}%` }} />
      </div>
      <span className="w-24 text-right text-xs tabular-nums text-zinc-600 dark:text-zinc-400">
        {total ? `${step}/${total}` : `step ${step}`}
      </span>
    </div>
  );
}

export function Card({ title, children, testId, actions }: { title?: string; children: ReactNode; testId?: string; actions?: ReactNode }) {
  return (
    <section data-testid={testId} className="rounded-lg border border-zinc-200 bg-white p-4 shadow-sm dark:border-zinc-800 dark:bg-zinc-900">
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
    <div data-testid={testId} className="rounded-lg border border-zinc-200 bg-white px-4 py-3 dark:border-zinc-800 dark:bg-zinc-900">
      <div className="text-xs text-zinc-500 dark:text-zinc-400">{label}</div>
      <div className="mt-1 text-xl font-semibold tabular-nums">{value}</div>
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
  const delta = epochSeconds - nowSeconds;
  const abs = Math.abs(delta);
  const text = abs < 60 ? `${Math.round(abs)}s` : abs < 3600 ? `${Math.round(abs / 60)}m` : abs < 86400 ? `${Math.round(abs / 3600)}h` : `${Math.round(abs / 86400)}d`;
  return delta >= 0 ? `in ${text}` : `${text} ago`;
}
