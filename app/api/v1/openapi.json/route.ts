/**
 * GET /api/v1/openapi.json — the OpenAPI 3.1 document of the whole HTTP API, generated from the zod schemas
 * the routes validate with (lib/api/openapi.ts), so a client in any language can be generated from it.
 * A read like any other: the viewer token, so the API's surface is not mapped by someone without one.
 */

import { handle, json, refused } from '@/lib/api';
import { otherMethods } from '@/lib/api/methods';
import { openApiDocument } from '@/lib/api/openapi';
import { authorizeRequest } from '@/lib/auth/server';

export async function GET(request: Request) {
  return handle(request, async () => {
    const { refusal } = await authorizeRequest(request, 'viewer', { mutation: false });
    if (refusal) return refused(refusal);
    return json(openApiDocument());
  });
}

/** Every other method: 405 METHOD_NOT_ALLOWED with Allow; OPTIONS: 204 with Allow (lib/api/methods.ts). */
export const { POST, PUT, PATCH, DELETE, OPTIONS } = otherMethods('/api/v1/openapi.json', authorizeRequest);
