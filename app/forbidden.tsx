/** 403: signed in with a role that may not do this (a viewer on an operator's page or action), or a cross-site request. */
import type { Metadata } from 'next';
import Link from 'next/link';
import { buttonClass } from './components/ui';

export const metadata: Metadata = { title: 'Not allowed' };

export default function Forbidden() {
  return (
    <div data-testid="forbidden" className="mx-auto max-w-xl px-6 py-16 text-center">
      <p className="text-sm font-semibold text-blue-700 dark:text-blue-400">403</p>
      <h1 className="mt-2 text-2xl font-semibold tracking-tight">Not allowed</h1>
      <p className="mt-2 text-sm text-zinc-600 dark:text-zinc-400">
        Your role may not do this: starting runs, pausing, cancelling, retrying and resolving claims need the operator
        token. Requests from other sites are refused too.
      </p>
      <div className="mt-6 flex flex-wrap justify-center gap-2">
        <Link href="/login" className={buttonClass('primary')}>
          Sign in as an operator
        </Link>
        <Link href="/" className={buttonClass()}>
          Back to runs
        </Link>
      </div>
    </div>
  );
}
