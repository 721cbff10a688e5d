/**
 * The 404 of the whole app: an unknown URL, or a page that called notFound() (a run id that does not exist).
 */
import type { Metadata } from 'next';
import Link from 'next/link';
import { buttonClass } from './components/ui';

export const metadata: Metadata = { title: 'Not found' };

export default function NotFound() {
  return (
    <div data-testid="not-found" className="mx-auto max-w-xl px-6 py-16 text-center">
      <p className="text-sm font-semibold text-blue-700 dark:text-blue-400">404</p>
      <h1 className="mt-2 text-2xl font-semibold tracking-tight">Nothing here</h1>
      <p className="mt-2 text-sm text-zinc-600 dark:text-zinc-400">
        There is no page at this address. If you followed a link to a run, its id may be mistyped, or the run belongs to
        another database.
      </p>
      <div className="mt-6 flex flex-wrap justify-center gap-2">
        <Link href="/" className={buttonClass('primary')}>
          Back to runs
        </Link>
        <Link href="/runs/new" className={buttonClass()}>
          Start a run
        </Link>
      </div>
    </div>
  );
}
