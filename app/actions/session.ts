'use server';
/**
 * Sign-in and sign-out. Sign-in needs no role, so it makes the cross-site check itself: a page on another
 * site must not be able to sign a browser in under a token of its choosing (login CSRF).
 */
import { cookies, headers } from 'next/headers';
import { forbidden, redirect } from 'next/navigation';
import { z } from 'zod';
import { safeNextPath } from '@/lib/auth/next-path';
import { authEnabled, roleForToken } from '@/lib/auth/principal';
import { crossSiteRefusal, reachedOverHttps } from '@/lib/auth/server';
import { SESSION_COOKIE, signSession } from '@/lib/auth/session';
import { config } from '@/lib/config';
import { type ActionResult, fieldErrors } from './result';

const signInSchema = z.object({
  token: z.string().min(1, 'enter your token').max(256, 'a token is at most 256 characters'),
  name: z.string().trim().max(64, 'at most 64 characters'),
  next: z.string().max(2048).optional(),
});

export async function signInAction(_previous: ActionResult | null, form: FormData): Promise<ActionResult> {
  const h = await headers();
  if (crossSiteRefusal(h)) forbidden();
  const cfg = config();
  if (!authEnabled(cfg))
    return { ok: false, message: 'sign-in is off: no token is configured, and the dashboard answers on loopback only' };
  const parsed = signInSchema.safeParse({
    token: form.get('token') ?? '',
    name: form.get('name') ?? '',
    next: (form.get('next') as string | null) ?? undefined,
  });
  if (!parsed.success) return { ok: false, message: 'check the form', errors: fieldErrors(parsed.error) };
  const role = roleForToken(cfg, parsed.data.token);
  // One message for every wrong token: which of the two roles a guess came close to is nobody's business.
  if (!role)
    return {
      ok: false,
      message: 'that token is not valid',
      errors: { token: ['not a valid operator or viewer token'] },
    };
  const session = signSession(cfg, { role, name: parsed.data.name }, Date.now());
  (await cookies()).set(SESSION_COOKIE, session.value, {
    httpOnly: true,
    sameSite: 'strict',
    secure: reachedOverHttps(h),
    path: '/',
    expires: session.expires,
  });
  redirect(safeNextPath(parsed.data.next));
}

export async function signOutAction(): Promise<void> {
  const h = await headers();
  if (crossSiteRefusal(h)) forbidden();
  (await cookies()).delete({ name: SESSION_COOKIE, path: '/' });
  redirect('/login');
}
