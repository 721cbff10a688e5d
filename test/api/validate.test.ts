/**
 * Validation at the edge: errors name the field, unknown fields are named too, and the id and key rules keep
 * out what would break a URL, a log line or PostgreSQL's text type.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { decodeRunsCursor, encodeRunsCursor } from '../../lib/api/cursor';
import { idemKey, newRunId, runRef } from '../../lib/api/ids';
import { claimBody, commitBody } from '../../lib/api/protocol';
import { parse, queryLimit, queryOf } from '../../lib/api/validate';
import { ApiError } from '../../lib/errors';

function fails(fn: () => unknown): ApiError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ApiError);
    return error as ApiError;
  }
  throw new Error('expected a refusal');
}

describe('parse', () => {
  it('names every wrong, missing and unknown field', () => {
    const error = fails(() => parse(claimBody, { runId: 7, key: '', froce: true, leaseMs: 1e12 }, 'body'));
    expect(error.code).toBe('INVALID_INPUT');
    expect(error.fields).toEqual({
      runId: ['must be a string'],
      key: ['must not be empty'],
      leaseMs: ['must be at most 86,400,000 ms (a day)'],
      froce: ['is not a known field'],
    });
    expect(error.message).toBe('invalid body: runId: must be a string');
  });

  it('says "is required" for a missing field and files whole-value problems under the source', () => {
    expect(fails(() => parse(commitBody, { runId: 'r', key: 'k', token: 't' }, 'body')).fields).toEqual({
      result: ['is required'],
    });
    expect(fails(() => parse(commitBody, [1, 2], 'body')).fields).toEqual({
      body: ['Invalid input: expected object, received array'],
    });
    expect(fails(() => parse(commitBody, undefined, 'body')).fields).toEqual({
      body: ['Invalid input: expected object, received undefined'],
    });
  });

  it('names fields called constructor or __proto__ like any other (they are not Object.prototype members)', () => {
    const body = JSON.parse('{"runId":"r","key":"k","constructor":1,"__proto__":{"admin":true},"toString":"x"}');
    // Built with fromEntries: a `__proto__:` in an object literal would set the prototype, not a field.
    expect(fails(() => parse(claimBody, body, 'body')).fields).toEqual(
      Object.fromEntries(['constructor', '__proto__', 'toString'].map((name) => [name, ['is not a known field']])),
    );
    expect(Object.keys(fails(() => parse(z.strictObject({}), { constructor: 1 }, 'query')).fields!)).toEqual([
      'constructor',
    ]);
    expect(fails(() => queryOf('http://h/api?constructor=1&constructor=2')).fields).toEqual({
      constructor: ['given more than once'],
    });
    expect(Object.keys(queryOf('http://h/api?__proto__=x&hasOwnProperty=y'))).toEqual(['__proto__', 'hasOwnProperty']);
  });

  it('accepts null as a result: only a missing one is refused', () => {
    expect(parse(commitBody, { runId: 'r', key: 'k', token: 't', result: null }, 'body').result).toBeNull();
  });
});

describe('ids and keys', () => {
  it('run ids: the lookup rule, ≤ 512 characters without spaces or control characters', () => {
    for (const ok of ['r1', 'agent-batch-2025-01-01-ab12', 'user@example.com/job:7', 'a'.repeat(512), 'é', 'r%2F'])
      expect(runRef.safeParse(ok).success).toBe(true);
    for (const bad of ['', 'a'.repeat(513), 'a b', 'r\u0000', 'a\tb', 'a\u007fb']) {
      expect(runRef.safeParse(bad).success, bad).toBe(false);
    }
    // New runs keep the engine's stricter rule, so a run started here has an id every page and CLI accepts.
    expect(newRunId.safeParse('a@b').success).toBe(false);
    expect(newRunId.safeParse('a:b-c.d_e').success).toBe(true);
  });

  it('keys: ≤ 512 printable characters, no control or invisible ones', () => {
    for (const ok of ['run-1:step:7', 'sha256/ab12', 'naïve key with spaces', 'k'.repeat(512)])
      expect(idemKey.safeParse(ok).success).toBe(true);
    for (const bad of ['', 'k'.repeat(513), 'a\u0000b', 'a\nb', 'a\u200bb', 'a\ud800b', 'a\u007fb'])
      expect(idemKey.safeParse(bad).success, JSON.stringify(bad)).toBe(false);
  });
});

describe('query strings and paths', () => {
  it('refuses a repeated parameter instead of picking one', () => {
    expect(queryOf('http://h/api?a=1&b=2')).toEqual({ a: '1', b: '2' });
    expect(fails(() => queryOf('http://h/api?limit=1&limit=2')).fields).toEqual({ limit: ['given more than once'] });
  });

  it('takes limits as plain digits within range', () => {
    const limit = z.object({ limit: queryLimit(500) });
    expect(parse(limit, { limit: '500' }, 'query')).toEqual({ limit: 500 });
    for (const bad of ['0', '501', '1e3', '-1', '1.5', '', ' 5', '9999999'])
      expect(limit.safeParse({ limit: bad }).success, bad).toBe(false);
  });

  it('round-trips a runs cursor and refuses one it did not make', () => {
    expect(decodeRunsCursor(encodeRunsCursor({ updatedAt: 1700000000.5, id: 'r1' }))).toEqual({
      updatedAt: 1700000000.5,
      id: 'r1',
    });
    for (const bad of [
      '',
      'not a cursor',
      Buffer.from('[1]').toString('base64url'),
      Buffer.from('{"a":1}').toString('base64url'),
    ]) {
      expect(fails(() => decodeRunsCursor(bad)).fields).toEqual({ cursor: ['not a cursor this API returned'] });
    }
  });
});
