'use client';
/**
 * The error boundary of every page below the layout. It never shows the error's message or stack: a server
 * error arrives with a digest that names it in the server log, which is what an operator needs to find it.
 * A store that cannot be reached has a state of its own (its digest says so, see lib/data/store-digest.ts):
 * it is an outage to wait out, not a bug. While it lasts the proxy answers further page requests with a 503.
 */
import Link from 'next/link';
import { STORE_UNAVAILABLE_DIGEST } from '@/lib/data/store-digest';
import { buttonClass } from './components/ui';

export default function ErrorPage({ error, retry }: { error: unknown; retry: () => void }) {
  const digest = error instanceof Error && 'digest' in error && typeof error.digest === 'string' ? error.digest : null;
  const storeDown = digest === STORE_UNAVAILABLE_DIGEST;

  return (
    <div
      role="alert"
      data-testid={storeDown ? 'store-unavailable' : 'error-boundary'}
      className="mx-auto max-w-xl rounded-lg border border-red-200 bg-white px-6 py-10 text-center shadow-sm dark:border-red-900 dark:bg-zinc-900"
    >
      <h1 className="text-lg font-semibold">
        {storeDown ? 'The store is unavailable' : 'This page could not be loaded'}
      </h1>
      <p className="mt-2 text-sm text-zinc-600 dark:text-zinc-400">
        {storeDown
          ? 'The dashboard cannot reach its database right now. Workers that use the same database cannot claim or ' +
            'commit steps while it is unreachable from them too; they retry on their own. Steps already committed stay committed.'
          : 'Something went wrong on the server while loading this page. Steps already committed stay committed; the ' +
            'server log has the details.'}
      </p>
      {digest && !storeDown && (
        <p className="mt-3 text-xs text-zinc-500 dark:text-zinc-400">
          Reference <code className="rounded bg-zinc-100 px-1 py-0.5 font-mono dark:bg-zinc-800">{digest}</code> in the
          server log
        </p>
      )}
      <div className="mt-6 flex flex-wrap justify-center gap-2">
        <button type="button" data-testid="error-retry" onClick={() => retry()} className={buttonClass('primary')}>
          Try again
        </button>
        <Link href="/" className={buttonClass()}>
          Back to runs
        </Link>
      </div>
    </div>
  );
}
