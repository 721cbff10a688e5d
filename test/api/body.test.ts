/**
 * Reading bodies: the byte limit holds whether or not Content-Length tells the truth, and bad JSON is named
 * by position, deep nesting refused before it can reach JSON.stringify's recursion. A body is JSON only when its
 * Content-Type says so or says nothing.
 */
import { describe, expect, it } from 'vitest';
import { parseJson, readBody, readJson } from '../../lib/api/body';
import { MAX_DEPTH, nestingDepth } from '../../lib/domain/json-input';
import { jsonMediaTypeProblem } from '../../lib/domain/json-media-type';
import { ApiError } from '../../lib/errors';

const LIMIT = 1024;

/** A request whose body arrives in chunks with no Content-Length, as a chunked upload does. */
function chunked(chunks: Uint8Array[], headers: Record<string, string> = {}): Request {
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const c of chunks) controller.enqueue(c);
      controller.close();
    },
  });
  return new Request('http://127.0.0.1/x', { method: 'POST', body: stream, headers, duplex: 'half' } as RequestInit);
}

async function refusal(promise: Promise<unknown>): Promise<ApiError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ApiError);
  return error as ApiError;
}

describe('readBody', () => {
  it('reads a body of exactly the limit', async () => {
    const text = 'a'.repeat(LIMIT);
    expect(await readBody(new Request('http://127.0.0.1/x', { method: 'POST', body: text }), LIMIT)).toBe(text);
  });

  it('refuses a declared Content-Length over the limit before reading', async () => {
    const request = chunked([new TextEncoder().encode('{}')], { 'content-length': String(LIMIT + 1) });
    const error = await refusal(readBody(request, LIMIT));
    expect(error.code).toBe('PAYLOAD_TOO_LARGE');
    expect(error.message).toBe(`request body is larger than ${LIMIT} bytes (WAYBILL_MAX_BODY_BYTES)`);
  });

  it('counts bytes while reading when Content-Length is absent or lies', async () => {
    const chunk = new Uint8Array(600).fill(0x61);
    expect((await refusal(readBody(chunked([chunk, chunk]), LIMIT))).code).toBe('PAYLOAD_TOO_LARGE');
    expect((await refusal(readBody(chunked([chunk, chunk], { 'content-length': '2' }), LIMIT))).code).toBe(
      'PAYLOAD_TOO_LARGE',
    );
    // Multi-byte characters count as their bytes: 400 × "é" is 800 bytes, 700 of them are 1,400.
    expect((await readBody(chunked([new TextEncoder().encode('é'.repeat(400))]), LIMIT)).length).toBe(400);
    expect((await refusal(readBody(chunked([new TextEncoder().encode('é'.repeat(700))]), LIMIT))).code).toBe(
      'PAYLOAD_TOO_LARGE',
    );
  });

  it('refuses bytes that are not UTF-8', async () => {
    const error = await refusal(readBody(chunked([new Uint8Array([0x7b, 0xff, 0xfe, 0x7d])]), LIMIT));
    expect([error.code, error.message]).toEqual(['INVALID_JSON', 'request body is not valid UTF-8']);
  });

  it('gives an empty string for no body', async () => {
    expect(await readBody(new Request('http://127.0.0.1/x', { method: 'POST' }), LIMIT)).toBe('');
  });
});

describe('parseJson', () => {
  it('parses JSON and treats an empty body as undefined', () => {
    expect(parseJson('{"a":[1,"x",null]}')).toEqual({ a: [1, 'x', null] });
    expect(parseJson('  \n')).toBeUndefined();
  });

  it('names the line, column and position where malformed JSON stops', () => {
    const error = (() => {
      try {
        parseJson('{\n  "a": 1,\n}');
      } catch (e) {
        return e as ApiError;
      }
    })()!;
    expect(error.code).toBe('INVALID_JSON');
    expect(error.extra).toEqual({ position: 12, line: 3, column: 1 });
    expect(error.message).toMatch(/^request body is not valid JSON at line 3 column 1 \(position 12\): /);
  });

  it('puts truncated JSON at its end', () => {
    const error = (() => {
      try {
        parseJson('{"a": [1, 2');
      } catch (e) {
        return e as ApiError;
      }
    })()!;
    expect(error.extra).toMatchObject({ position: 11, line: 1 });
  });

  it(`refuses nesting deeper than ${MAX_DEPTH} before parsing, counting only brackets outside strings`, () => {
    expect(nestingDepth('[[{"a":"[[[[{{{"}]]')).toBe(3);
    expect(nestingDepth('"\\"[[["')).toBe(0);
    const ok = '['.repeat(MAX_DEPTH) + ']'.repeat(MAX_DEPTH);
    expect(parseJson(ok)).toBeInstanceOf(Array);
    const deep = '['.repeat(500_000) + ']'.repeat(500_000);
    expect(() => parseJson(deep)).toThrow(`request body nests 500,000 levels deep: the limit is ${MAX_DEPTH}`);
  });
});

describe('jsonMediaTypeProblem', () => {
  it('reads no Content-Type, application/json and application/<name>+json, with a charset only if it is UTF-8', () => {
    for (const type of [
      null,
      'application/json',
      'application/json; charset=utf-8',
      'APPLICATION/JSON;CHARSET=UTF8',
      'application/json; charset="utf-8"; profile=x',
      'application/vnd.waybill.run+json',
      'application/merge-patch+json; charset=utf-8',
    ]) {
      expect(jsonMediaTypeProblem(type), String(type)).toBeNull();
    }
  });

  it('names what was sent otherwise', () => {
    for (const type of [
      '',
      'text/plain',
      'text/plain;charset=UTF-8',
      'text/json',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/jsonl',
      'application/json, text/plain',
    ]) {
      expect(jsonMediaTypeProblem(type), type).toBe(
        `Content-Type ${JSON.stringify(type)} is not JSON: send application/json (or application/<name>+json), or no Content-Type`,
      );
    }
    for (const type of [
      'application/json; charset=latin1',
      'application/json; charset=utf-16',
      'application/json; charset=',
    ]) {
      expect(jsonMediaTypeProblem(type), type).toMatch(/ is not UTF-8, the one charset a JSON body has/);
    }
  });
});

describe('readJson', () => {
  const post = (body: BodyInit | undefined, contentType?: string) =>
    new Request('http://127.0.0.1/x', {
      method: 'POST',
      body,
      headers: contentType === undefined ? {} : { 'content-type': contentType },
    });

  it('refuses a body sent as another charset by its Content-Type, before decoding it', async () => {
    const latin1 = new Uint8Array([0x7b, 0x22, 0xe9, 0x22, 0x3a, 0x31, 0x7d]); // {"é":1} in ISO-8859-1
    const error = await refusal(readJson(post(latin1, 'application/json; charset=iso-8859-1'), LIMIT));
    expect([error.code, error.message]).toEqual([
      'UNSUPPORTED_MEDIA_TYPE',
      'Content-Type "application/json; charset=iso-8859-1" is not UTF-8, the one charset a JSON body has: send charset=utf-8, or no charset',
    ]);
  });

  it('does not ask a request with no body what it is', async () => {
    expect(await readJson(post(undefined, 'text/plain'), LIMIT)).toBeUndefined();
    expect(await readJson(post(new Uint8Array(0), 'text/plain'), LIMIT)).toBeUndefined();
    expect(await readJson(post(new TextEncoder().encode('{"a":1}')), LIMIT)).toEqual({ a: 1 });
  });
});
