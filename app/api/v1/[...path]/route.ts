/**
 * Any other path under /api/v1: a JSON 404 in the API's error shape rather than the dashboard's HTML page,
 * after the same sign-in check, so the API's surface is not mapped by someone without a token. OPTIONS too:
 * Next would answer it 204 with an Allow, as if there were an endpoint.
 */

import { handle, json, refused } from '@/lib/api';
import { errorBody } from '@/lib/api/errors';
import { authorizeRequest } from '@/lib/auth/server';

async function notFound(request: Request): Promise<Response> {
  return handle(request, async () => {
    const { refusal } = await authorizeRequest(request, 'viewer', { mutation: false });
    if (refusal) return refused(refusal);
    return json(
      errorBody(
        'NOT_FOUND',
        `no API endpoint at ${new URL(request.url).pathname.slice(0, 200)}: see docs/reference/http-api.md`,
      ),
      404,
    );
  });
}

export {
  notFound as GET,
  notFound as POST,
  notFound as PUT,
  notFound as PATCH,
  notFound as DELETE,
  notFound as OPTIONS,
};
