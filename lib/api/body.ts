/**
 * Reading a request body with a byte limit, and parsing it as JSON with a depth limit.
 *
 * The limit is checked twice: a Content-Length above it is refused before a byte is read, and the bytes are
 * counted while reading, because Content-Length may be absent (chunked) or lie. Nesting is bounded before
 * parsing: JSON.parse copes with a megabyte of `[`, but storing it means JSON.stringify, which recurses and
 * would overflow the stack — a 500 for a request that is simply bad.
 *
 * A body is read as JSON only when its Content-Type says JSON, or says nothing (lib/domain/json-media-type.ts).
 */
import { jsonProblemMessage, parseJsonInput } from '../domain/json-input';
import { jsonMediaTypeProblem } from '../domain/json-media-type';
import { ApiError } from '../errors';

/** The body as text, or '' when there is none; PAYLOAD_TOO_LARGE past `limit` bytes. */
export async function readBody(request: Request, limit: number): Promise<string> {
  return utf8(await readBytes(request, limit));
}

async function readBytes(request: Request, limit: number): Promise<Buffer> {
  const declared = request.headers.get('content-length');
  if (declared !== null && /^\d+$/.test(declared.trim()) && Number(declared) > limit) throw tooLarge(limit);
  if (!request.body) return Buffer.alloc(0);
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      // Stop reading: the rest of an oversize body is not worth the memory.
      await reader.cancel().catch(() => {});
      throw tooLarge(limit);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}

function utf8(bytes: Buffer): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new ApiError('INVALID_JSON', 'request body is not valid UTF-8');
  }
}

function tooLarge(limit: number): ApiError {
  return new ApiError(
    'PAYLOAD_TOO_LARGE',
    `request body is larger than ${limit} bytes (WAYBILL_MAX_BODY_BYTES)`,
    undefined,
    { limit },
  );
}

/**
 * The body parsed as JSON. An empty body is `undefined` (endpoints whose fields are all optional accept it);
 * malformed JSON names the position where parsing stopped.
 */
export function parseJson(text: string): unknown {
  if (text.trim() === '') return undefined;
  const parsed = parseJsonInput(text, { maxBytes: null });
  if (parsed.ok) return parsed.value;
  const { problem } = parsed;
  const details =
    problem.kind === 'not_json'
      ? { position: problem.position, line: problem.line, column: problem.column }
      : problem.kind === 'too_deep'
        ? { maxDepth: problem.limit }
        : { limit: problem.limit };
  throw new ApiError('INVALID_JSON', jsonProblemMessage('request body', problem), undefined, details);
}

/**
 * Reads and parses a JSON body in one go. A body sent as anything but JSON is refused before it is decoded, so
 * the refusal names its Content-Type rather than its bytes; a request with no body is not asked what it is.
 */
export async function readJson(request: Request, limit: number): Promise<unknown> {
  const bytes = await readBytes(request, limit);
  const problem = bytes.byteLength === 0 ? null : jsonMediaTypeProblem(request.headers.get('content-type'));
  if (problem !== null) throw new ApiError('UNSUPPORTED_MEDIA_TYPE', problem);
  return parseJson(utf8(bytes));
}
