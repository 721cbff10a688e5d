/**
 * Sign in with a role token. Public on purpose: it is where every page sends someone not signed in. Without
 * any token configured there is nothing to sign in to, and the page says why the dashboard is open.
 */
import type { Metadata } from 'next';
import { safeNextPath } from '@/lib/auth/next-path';
import { authEnabled } from '@/lib/auth/principal';
import { currentPrincipal } from '@/lib/auth/server';
import { config } from '@/lib/config';
import { LoginForm } from './login-form';

export const dynamic = 'force-dynamic';
export const metadata: Metadata = { title: 'Sign in' };

export default async function LoginPage({
  searchParams,
}: {
  searchParams: Promise<Record<string, string | string[] | undefined>>;
}) {
  const raw = (await searchParams).next;
  const next = safeNextPath(Array.isArray(raw) ? raw[0] : raw);
  const on = authEnabled(config());
  const who = on ? await currentPrincipal() : null;
  return (
    <div className="mx-auto max-w-md space-y-6 py-6">
      <header>
        <h1 className="text-2xl font-semibold tracking-tight">Sign in</h1>
        <p className="mt-1 text-sm text-zinc-600 dark:text-zinc-400">
          The operator token lets you pause, cancel and retry runs and expire or resolve claims; the viewer token lets
          you look.
        </p>
      </header>
      {!on ? (
        <p
          data-testid="login-off"
          className="rounded-lg border border-zinc-200 bg-white px-4 py-3 text-sm dark:border-zinc-800 dark:bg-zinc-900"
        >
          Sign-in is off: no <code className="font-mono text-xs">WAYBILL_OPERATOR_TOKEN</code> or{' '}
          <code className="font-mono text-xs">WAYBILL_VIEWER_TOKEN</code> is configured, so this server answers only on
          this machine&apos;s loopback address, and everyone who can reach it may do everything.
        </p>
      ) : (
        <>
          {who && (
            <p data-testid="login-current" className="text-sm text-zinc-700 dark:text-zinc-300">
              You are signed in as <span className="font-medium">{who.actor}</span>; signing in again replaces that
              session.
            </p>
          )}
          <LoginForm next={next} />
        </>
      )}
    </div>
  );
}
