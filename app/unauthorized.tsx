/** 401: nobody is signed in (a server action or page refused by unauthorized()). */
import type { Metadata } from 'next';
import Link from 'next/link';
import { buttonClass } from './components/ui';

export const metadata: Metadata = { title: 'Sign in required' };

export default function Unauthorized() {
  return (
    <div data-testid="unauthorized" className="mx-auto max-w-xl px-6 py-16 text-center">
      <p className="text-sm font-semibold text-blue-700 dark:text-blue-400">401</p>
      <h1 className="mt-2 text-2xl font-semibold tracking-tight">Sign in required</h1>
      <p className="mt-2 text-sm text-zinc-600 dark:text-zinc-400">
        This server has sign-in on, and you are not signed in (or your session expired, or a token was rotated).
      </p>
      <div className="mt-6">
        <Link href="/login" className={buttonClass('primary')}>
          Sign in
        </Link>
      </div>
    </div>
  );
}
