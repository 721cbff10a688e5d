/**
 * The run page's shape while its data loads, so nothing jumps when it arrives.
 * A Suspense fallback inside the page, not a loading.tsx: the page's sign-in check (and the run page's
 * existence check) must finish before the response starts streaming, so a redirect, 403 or 404 is a real status.
 */
function Block({ className }: { className: string }) {
  return <div className={`motion-safe:animate-pulse rounded-lg bg-zinc-200 dark:bg-zinc-800 ${className}`} />;
}

export default function RunSkeleton() {
  return (
    <div className="space-y-6" aria-busy="true" aria-live="polite">
      <p className="sr-only">Loading the run…</p>
      <div className="space-y-3">
        <Block className="h-4 w-32" />
        <Block className="h-7 w-72 max-w-full" />
        <Block className="h-4 w-96 max-w-full" />
      </div>
      <div className="grid grid-cols-1 gap-6 lg:grid-cols-[minmax(0,2fr)_minmax(0,1fr)]">
        <div className="space-y-6">
          <Block className="h-40" />
          <div className="grid grid-cols-1 gap-6 xl:grid-cols-2">
            <Block className="h-80" />
            <Block className="h-80" />
          </div>
          <Block className="h-64" />
        </div>
        <div className="space-y-6">
          <Block className="h-36" />
          <Block className="h-32" />
          <Block className="h-96" />
        </div>
      </div>
    </div>
  );
}
