/**
 * Shown while the runs list loads: its shape, so nothing jumps when it arrives.
 * A Suspense fallback inside the page, not a loading.tsx: the page's sign-in check (and the run page's
 * existence check) must finish before the response starts streaming, so a redirect, 403 or 404 is a real status.
 */
const bar = 'motion-safe:animate-pulse rounded bg-zinc-200 dark:bg-zinc-800';

export default function RunsSkeleton() {
  return (
    <div role="status" aria-live="polite" data-testid="loading" className="space-y-6">
      <span className="sr-only">Loading…</span>
      <div className="flex items-end justify-between gap-3" aria-hidden>
        <div className="space-y-2">
          <div className={`${bar} h-7 w-32`} />
          <div className={`${bar} h-4 w-64 max-w-full`} />
        </div>
        <div className={`${bar} h-8 w-28`} />
      </div>
      <div className="grid grid-cols-2 gap-3 sm:grid-cols-4 lg:grid-cols-7" aria-hidden>
        {Array.from({ length: 7 }, (_, i) => (
          <div
            key={i}
            className="rounded-lg border border-zinc-200 bg-white px-4 py-3 dark:border-zinc-800 dark:bg-zinc-900"
          >
            <div className={`${bar} h-3 w-16`} />
            <div className={`${bar} mt-2 h-6 w-10`} />
          </div>
        ))}
      </div>
      <div
        className="overflow-hidden rounded-lg border border-zinc-200 bg-white dark:border-zinc-800 dark:bg-zinc-900"
        aria-hidden
      >
        <div className="border-b border-zinc-200 bg-zinc-50 px-3 py-3 dark:border-zinc-800 dark:bg-zinc-900/60">
          <div className={`${bar} h-3 w-1/3`} />
        </div>
        {Array.from({ length: 8 }, (_, i) => (
          <div
            key={i}
            className="flex items-center gap-4 border-b border-zinc-100 px-3 py-3 last:border-0 dark:border-zinc-800"
          >
            <div className={`${bar} h-4 w-4`} />
            <div className={`${bar} h-4 w-48`} />
            <div className={`${bar} h-5 w-16 rounded-full`} />
            <div className={`${bar} hidden h-2 flex-1 rounded-full sm:block`} />
            <div className={`${bar} h-4 w-12`} />
          </div>
        ))}
      </div>
    </div>
  );
}
