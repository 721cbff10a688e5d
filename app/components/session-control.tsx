/**
 * The header's account corner: who is signed in and as what, with sign-out; a sign-in link when nobody is;
 * and, with no tokens configured, a plain note that sign-in is off (loopback only).
 */
import Link from 'next/link';
import { signOutAction } from '@/app/actions/session';
import type { Principal } from '@/lib/auth/principal';
import { buttonClass } from './ui';

export function SessionControl({ who }: { who: Principal | null }) {
  if (who?.role === 'local') {
    return (
      <span
        data-testid="session-local"
        className="ml-auto text-xs text-zinc-500 dark:text-zinc-400"
        title="No WAYBILL_OPERATOR_TOKEN is set: the dashboard answers on loopback only, with no sign-in"
      >
        local · sign-in off
      </span>
    );
  }
  if (!who) {
    return (
      <Link href="/login" data-testid="session-sign-in" className={`${buttonClass()} ml-auto py-1 text-xs`}>
        Sign in
      </Link>
    );
  }
  return (
    <form action={signOutAction} className="ml-auto flex items-center gap-2 text-sm">
      {/* The name alone: the role is the badge beside it ("vera (viewer) viewer" said it twice). */}
      <span
        data-testid="session-who"
        className="max-w-[16rem] truncate text-zinc-700 dark:text-zinc-300"
        title={who.actor}
      >
        {who.name ?? <span className="text-zinc-500 dark:text-zinc-400">no name</span>}
      </span>
      <span
        data-testid="session-role"
        className="rounded-full bg-zinc-100 px-2 py-0.5 text-xs font-medium text-zinc-700 ring-1 ring-inset ring-zinc-300 dark:bg-zinc-800 dark:text-zinc-300 dark:ring-zinc-700"
      >
        {who.role}
      </span>
      <button type="submit" data-testid="session-sign-out" className={`${buttonClass()} py-1 text-xs`}>
        Sign out
      </button>
    </form>
  );
}
