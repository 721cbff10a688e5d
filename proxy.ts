/**
 * Two guards that must run before Next.js itself answers, each turning what Next would answer with a bare
 * 500 into the refusal it is. Neither is an authorization check: every action and route handler makes its own.
 *
 * - A server action from another site: Next's own check (Origin against Host) aborts it with a 500 "Invalid
 *   Server Actions request". Here it is a 403 first; the action's requireAction() repeats the test.
 * - A path under /api/v1 whose percent-encoding is broken (`/api/v1/runs/%E0%A4%A`): Next's dynamic-route
 *   matcher throws while decoding the params. Here it becomes the API's 400.
 */
import { NextResponse, type NextRequest } from 'next/server';
import { crossSiteReason, requestFacts } from './lib/auth/origin';
import { config as waybillConfig } from './lib/config';

export function proxy(request: NextRequest) {
  if (request.nextUrl.pathname.startsWith('/api/v1')) return brokenEncoding(request.nextUrl.pathname) ?? NextResponse.next();
  return crossSiteAction(request) ?? NextResponse.next();
}

function brokenEncoding(path: string): NextResponse | null {
  try {
    for (const segment of path.split('/')) decodeURIComponent(segment);
    return null;
  } catch {
    return NextResponse.json(
      { error: { code: 'INVALID_INPUT', message: 'invalid path: broken percent-encoding', fields: { path: ['is not valid percent-encoding'] } } },
      { status: 400, headers: { 'cache-control': 'no-store' } },
    );
  }
}

function crossSiteAction(request: NextRequest): NextResponse | null {
  if (request.method !== 'POST') return null;
  const reason = crossSiteReason(requestFacts(request.headers), waybillConfig().WAYBILL_PUBLIC_ORIGIN);
  if (!reason) return null;
  return new NextResponse(`403 Forbidden: ${reason}\n`, { status: 403, headers: { 'content-type': 'text/plain; charset=utf-8' } });
}

// Server actions (they carry a Next-Action header) and the API's paths; nothing else passes through here.
export const config = {
  matcher: [{ source: '/:path*', has: [{ type: 'header', key: 'next-action' }] }, '/api/v1/:path*'],
};
