/**
 * Refuses cross-site server-action requests with a 403 before Next.js looks at them. Next's own check
 * (Origin against Host) aborts such a request with a 500 "Invalid Server Actions request", which reads as a
 * server fault; a refusal should say it is one. This is not the check that protects: every action calls
 * requireAction() itself, which makes the same cross-site test plus the role check.
 */
import { NextResponse, type NextRequest } from 'next/server';
import { crossSiteReason } from './lib/auth/origin';
import { config as waybillConfig } from './lib/config';

export function proxy(request: NextRequest) {
  if (request.method !== 'POST') return NextResponse.next();
  const h = request.headers;
  const reason = crossSiteReason(
    { host: h.get('host'), origin: h.get('origin'), secFetchSite: h.get('sec-fetch-site'), forwardedProto: h.get('x-forwarded-proto') },
    waybillConfig().WAYBILL_PUBLIC_ORIGIN,
  );
  if (!reason) return NextResponse.next();
  return new NextResponse(`403 Forbidden: ${reason}\n`, { status: 403, headers: { 'content-type': 'text/plain; charset=utf-8' } });
}

// Server actions only (they carry a Next-Action header); route handlers make their own check and answer JSON.
export const config = { matcher: [{ source: '/:path*', has: [{ type: 'header', key: 'next-action' }] }] };
