/**
 * One guard that must run before Next.js matches a route: a path under /api/v1 whose percent-encoding is
 * broken (`/api/v1/runs/%E0%A4%A`) makes Next's dynamic-route matcher throw while decoding the params, and
 * Next answers that with a bare 500 before any route handler runs. Here it becomes the API's 400.
 * Not an authorization check — every route handler makes its own.
 */
import { NextResponse, type NextRequest } from 'next/server';

export function proxy(request: NextRequest) {
  const raw = request.nextUrl.pathname;
  try {
    for (const segment of raw.split('/')) decodeURIComponent(segment);
  } catch {
    return NextResponse.json(
      { error: { code: 'INVALID_INPUT', message: 'invalid path: broken percent-encoding', fields: { path: ['is not valid percent-encoding'] } } },
      { status: 400, headers: { 'cache-control': 'no-store' } },
    );
  }
  return NextResponse.next();
}

export const config = { matcher: '/api/v1/:path*' };
