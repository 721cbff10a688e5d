/**
 * Two guards that must run before Next.js itself answers. Neither is an authorization check: every page,
 * action and route handler makes its own.
 *
 * - A server action from another site: Next's own check (Origin against Host) aborts it with a 500 "Invalid
 *   Server Actions request"; here it is a 403 first, and the action's requireAction() repeats the test.
 * - A page while the store is unreachable (lib/data/store-health.ts): a 503 with Retry-After and a page that
 *   says so, rather than a render that can only fail. The store is looked at again once a second meanwhile.
 *   The request that finds the outage first still renders; its error page says the store is unavailable.
 *
 * The proxy matches nothing else, and in particular not /api/v1, the model gateway's /v1, or any request with
 * a body other than an action's: Next hands a proxy a copy of the request body and holds the request until that
 * body has arrived (up to the guard's limit), before any route handler could check the caller or the
 * Content-Length. Under /api/v1 the route handlers authorize first and read the body after, with its size checked
 * before a byte is read (lib/api/body.ts). What Next answers with a 500 before any of our code runs (TRACE,
 * broken percent-encoding, a body beyond every limit) is refused in front of Next, by lib/launch/http-guard.mjs.
 */
import { type NextRequest, NextResponse } from 'next/server';
import { crossSiteReason, requestFacts } from './lib/auth/origin';
import { config as waybillConfig } from './lib/config';
import { probeStore, storeDownSince } from './lib/data/store-health';

/** Seconds a browser (or a monitor) waits before asking again. */
const RETRY_AFTER_S = 2;

export function proxy(request: NextRequest) {
  return crossSiteAction(request) ?? storeUnavailable(request) ?? NextResponse.next();
}

function storeUnavailable(request: NextRequest): NextResponse | null {
  if ((request.method !== 'GET' && request.method !== 'HEAD') || request.headers.has('next-action')) return null;
  const since = storeDownSince();
  if (since === null) return null;
  probeStore();
  const seconds = Math.max(0, Math.round((Date.now() - since) / 1000));
  return new NextResponse(unavailablePage(seconds), {
    status: 503,
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'retry-after': String(RETRY_AFTER_S),
      'cache-control': 'no-store',
    },
  });
}

/** Plain HTML with no script: the layout's components need the store too. It reloads itself until the store is back. */
function unavailablePage(seconds: number): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="${RETRY_AFTER_S}">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>Store unavailable · Waybill</title></head>
<body style="font-family:system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem;color:#18181b">
<main role="alert" data-testid="store-unavailable"><h1 style="font-size:1.25rem">The store is unavailable</h1>
<p>The dashboard has not been able to reach its database for ${seconds} s. Workers that use the same database
cannot claim or commit steps while it is unreachable from them too; they retry on their own. Steps already committed
stay committed.</p><p>This page reloads itself every ${RETRY_AFTER_S} s and shows the dashboard again once the database answers.</p></main>
</body></html>`;
}

function crossSiteAction(request: NextRequest): NextResponse | null {
  if (request.method !== 'POST') return null;
  const reason = crossSiteReason(requestFacts(request.headers), waybillConfig().WAYBILL_PUBLIC_ORIGIN);
  if (!reason) return null;
  return new NextResponse(`403 Forbidden: ${reason}\n`, {
    status: 403,
    headers: { 'content-type': 'text/plain; charset=utf-8' },
  });
}

// Server actions (they carry a Next-Action header), and pages asked for without a body; never /api or /v1 (the model
// gateway answers its own errors, a store outage included), never Next's assets.
export const config = {
  matcher: [
    { source: '/:path*', has: [{ type: 'header', key: 'next-action' }] },
    {
      source: '/((?!api/|v1/|_next/|favicon\\.ico).*)',
      missing: [
        { type: 'header', key: 'content-length' },
        { type: 'header', key: 'transfer-encoding' },
        { type: 'header', key: 'next-action' },
      ],
    },
  ],
};
