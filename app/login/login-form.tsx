'use client';
/** The sign-in form: a token (never echoed back) and an optional name for the audit log. */
import { useActionState, useId } from 'react';
import type { ActionResult } from '@/app/actions/result';
import { signInAction } from '@/app/actions/session';
import { buttonClass } from '@/app/components/ui';

const field =
  'mt-1.5 block w-full rounded-md border bg-white px-3 py-2 text-sm text-zinc-900 shadow-sm focus-visible:outline-2 focus-visible:outline-blue-600 dark:bg-zinc-900 dark:text-zinc-100 dark:scheme-dark';

export function LoginForm({ next }: { next: string }) {
  const [state, action, pending] = useActionState<ActionResult | null, FormData>(signInAction, null);
  const ids = { token: useId(), name: useId() };
  const tokenError = state && !state.ok ? state.errors?.token?.join('; ') : undefined;
  const nameError = state && !state.ok ? state.errors?.name?.join('; ') : undefined;
  return (
    <form
      action={action}
      data-testid="login-form"
      className="space-y-5 rounded-lg border border-zinc-200 bg-white p-5 shadow-sm dark:border-zinc-800 dark:bg-zinc-900"
    >
      {state && !state.ok && (
        <p
          role="alert"
          data-testid="login-error"
          className="rounded-md bg-red-50 px-3 py-2 text-sm text-red-800 dark:bg-red-950 dark:text-red-300"
        >
          {state.message}
        </p>
      )}
      <input type="hidden" name="next" value={next} />
      <div>
        <label htmlFor={ids.token} className="block text-sm font-medium">
          Token
        </label>
        <input
          id={ids.token}
          name="token"
          type="password"
          required
          autoComplete="current-password"
          data-testid="login-token"
          aria-invalid={tokenError ? true : undefined}
          aria-describedby={tokenError ? `${ids.token}-error` : undefined}
          className={`${field} ${tokenError ? 'border-red-500' : 'border-zinc-300 dark:border-zinc-700'}`}
        />
        {tokenError && (
          <p
            id={`${ids.token}-error`}
            data-testid="field-error-token"
            className="mt-1 text-sm text-red-700 dark:text-red-400"
          >
            {tokenError}
          </p>
        )}
      </div>
      <div>
        <label htmlFor={ids.name} className="block text-sm font-medium">
          Your name{' '}
          <span className="font-normal text-zinc-600 dark:text-zinc-400">(optional, shown in the audit log)</span>
        </label>
        <input
          id={ids.name}
          name="name"
          type="text"
          maxLength={64}
          autoComplete="name"
          data-testid="login-name"
          aria-invalid={nameError ? true : undefined}
          aria-describedby={nameError ? `${ids.name}-error` : undefined}
          className={`${field} ${nameError ? 'border-red-500' : 'border-zinc-300 dark:border-zinc-700'}`}
        />
        {nameError && (
          <p
            id={`${ids.name}-error`}
            data-testid="field-error-name"
            className="mt-1 text-sm text-red-700 dark:text-red-400"
          >
            {nameError}
          </p>
        )}
      </div>
      <button type="submit" data-testid="login-submit" disabled={pending} className={buttonClass('primary')}>
        {pending ? 'Signing in…' : 'Sign in'}
      </button>
    </form>
  );
}
