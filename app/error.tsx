'use client';
/**
 * The error boundary of every page below the layout. It never shows the error's message or stack: a server
 * error arrives with a digest that names it in the server log, which is what an operator needs to find it.
 */
import Link from 'next/link';
import { useEffect } from 'react';
import { buttonClass } from './components/ui';

export default function ErrorPage({ error, retry }: { error: unknown; retry: () => void }) {
  useEffect(() => {
    console.error(error);
  }, [error]);
  const digest = error instanceof Error && 'digest' in error && typeof error.digest === 'string' ? error.digest : null;

  return (
    <div role="alert" data-testid="error-boundary"
      className="mx-auto max-w-xl rounded-lg border border-red-200 bg-white px-6 py-10 text-center shadow-sm dark:border-red-900 dark:bg-zinc-900">
      <h1 className="text-lg font-semibold">This page could not be loaded</h1>
      <p className="mt-2 text-sm text-zinc-600 dark:text-zinc-400">
        Something went wrong while loading this page. Your runs are not affected: workers keep going, and every step
        already committed stays committed.
      </p>
      {digest && (
        <p className="mt-3 text-xs text-zinc-500 dark:text-zinc-400">
          Reference <code className="rounded bg-zinc-100 px-1 py-0.5 font-mono dark:bg-zinc-800">{digest}</code> in the server log
        </p>
      )}
      <div className="mt-6 flex flex-wrap justify-center gap-2">
        <button type="button" data-testid="error-retry" onClick={() => retry()} className={buttonClass('primary')}>Try again</button>
        <Link href="/" className={buttonClass()}>Back to runs</Link>
      </div>
    </div>
  );
}
