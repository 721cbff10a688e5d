/**
 * The claims page's shape while its data loads, so nothing jumps when the table arrives.
 * A Suspense fallback inside the page, not a loading.tsx: the page's sign-in check (and the run page's
 * existence check) must finish before the response starts streaming, so a redirect, 403 or 404 is a real status.
 */
export default function ClaimsSkeleton() {
  return (
    <div className="space-y-6" aria-busy="true">
      <p role="status" className="sr-only">
        Loading claims…
      </p>
      <div className="flex flex-wrap items-start justify-between gap-4">
        <div className="space-y-2">
          <div className="h-8 w-48 motion-safe:animate-pulse rounded bg-zinc-200 dark:bg-zinc-800" />
          <div className="h-4 w-80 max-w-full motion-safe:animate-pulse rounded bg-zinc-200 dark:bg-zinc-800" />
        </div>
        <div className="flex gap-2">
          <div className="h-8 w-44 motion-safe:animate-pulse rounded-md bg-zinc-200 dark:bg-zinc-800" />
          <div className="h-8 w-16 motion-safe:animate-pulse rounded-md bg-zinc-200 dark:bg-zinc-800" />
        </div>
      </div>
      <div className="overflow-hidden rounded-lg border border-zinc-200 bg-white dark:border-zinc-800 dark:bg-zinc-900">
        <div className="h-9 border-b border-zinc-200 bg-zinc-50 dark:border-zinc-800 dark:bg-zinc-900/60" />
        {Array.from({ length: 5 }, (_, i) => (
          <div key={i} className="flex gap-4 border-b border-zinc-200 px-3 py-4 last:border-0 dark:border-zinc-800">
            <div className="h-4 w-40 motion-safe:animate-pulse rounded bg-zinc-200 dark:bg-zinc-800" />
            <div className="h-4 w-28 motion-safe:animate-pulse rounded bg-zinc-200 dark:bg-zinc-800" />
            <div className="h-4 w-10 motion-safe:animate-pulse rounded bg-zinc-200 dark:bg-zinc-800" />
            <div className="hidden h-4 w-32 motion-safe:animate-pulse rounded bg-zinc-200 sm:block dark:bg-zinc-800" />
            <div className="hidden h-4 w-20 motion-safe:animate-pulse rounded bg-zinc-200 md:block dark:bg-zinc-800" />
            <div className="hidden h-4 w-40 motion-safe:animate-pulse rounded bg-zinc-200 lg:block dark:bg-zinc-800" />
          </div>
        ))}
      </div>
    </div>
  );
}
