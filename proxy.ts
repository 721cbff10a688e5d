/**
 * One guard that must run before Next.js itself answers: a server action from another site. Next's own check
 * (Origin against Host) aborts it with a 500 "Invalid Server Actions request"; here it is a 403 first, and the
 * action's requireAction() repeats the test. It is not an authorization check: every action makes its own.
 *
 * The proxy matches nothing else, and in particular not /api/v1: Next hands a proxy a copy of the request body
 * and holds the request until that body has arrived (up to 10 MB), before any route handler could check the
 * caller or the Content-Length. Under /api/v1 the route handlers authorize first and read the body after, with
 * its size checked before a byte is read (lib/api/body.ts). What Next answers with a 500 before any of our code
 * runs (TRACE, broken percent-encoding, a declared body beyond every limit) is refused in front of Next, by
 * lib/launch/http-guard.mjs.
 */
import { NextResponse, type NextRequest } from 'next/server';
import { crossSiteReason, requestFacts } from './lib/auth/origin';
import { config as waybillConfig } from './lib/config';

export function proxy(request: NextRequest) {
  return crossSiteAction(request) ?? NextResponse.next();
}

function crossSiteAction(request: NextRequest): NextResponse | null {
  if (request.method !== 'POST') return null;
  const reason = crossSiteReason(requestFacts(request.headers), waybillConfig().WAYBILL_PUBLIC_ORIGIN);
  if (!reason) return null;
  return new NextResponse(`403 Forbidden: ${reason}\n`, { status: 403, headers: { 'content-type': 'text/plain; charset=utf-8' } });
}

// Server actions only: they carry a Next-Action header.
export const config = {
  matcher: [{ source: '/:path*', has: [{ type: 'header', key: 'next-action' }] }],
};
