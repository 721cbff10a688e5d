'use client';
/**
 * Refreshes the server components of the page every few seconds without a reload, with a pause control:
 * live by default, because a run page that does not move hides what matters.
 *
 * router.refresh() empties the client router's cache, prefetched routes included, and every <Link> still in
 * view prefetches its route again: fifty table rows cost fifty requests per refresh (125 in ten seconds on
 * the runs page). So links on the pages that refresh themselves, and the navigation, are `prefetch={false}`:
 * a click fetches its page then, which costs one request where the prefetches cost one per link per refresh.
 */
import { useRouter } from 'next/navigation';
import { useEffect, useState } from 'react';

export function LiveRefresh({ intervalMs = 2000 }: { intervalMs?: number }) {
  const router = useRouter();
  const [live, setLive] = useState(true);
  useEffect(() => {
    if (!live) return;
    const timer = setInterval(() => {
      if (document.visibilityState === 'visible') router.refresh();
    }, intervalMs);
    return () => clearInterval(timer);
  }, [live, intervalMs, router]);
  return (
    <button
      type="button"
      data-testid="live-toggle"
      aria-pressed={live}
      onClick={() => setLive((v) => !v)}
      className="inline-flex items-center gap-2 rounded-md border border-zinc-300 px-2.5 py-1 text-xs font-medium text-zinc-700 hover:bg-zinc-100 focus-visible:outline-2 focus-visible:outline-offset-2 focus-visible:outline-blue-600 dark:border-zinc-700 dark:text-zinc-300 dark:hover:bg-zinc-800"
    >
      <span
        className={`h-2 w-2 rounded-full ${live ? 'motion-safe:animate-pulse bg-emerald-500' : 'bg-zinc-400'}`}
        aria-hidden
      />
      {live ? 'Live' : 'Paused'}
    </button>
  );
}
