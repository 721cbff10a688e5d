/**
 * One error module: every error Waybill raises on purpose is a WaybillError defined in lib/errors.ts, so its
 * `code` is one of the ErrorCode union the API maps to a status and the CLI to an exit code.
 */
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { STATUS_BY_CODE } from '../../lib/api/errors';
import { exitCode } from '../../lib/cli/main';
import * as errors from '../../lib/errors';

const classes = Object.entries(errors).filter(([, v]) => typeof v === 'function' && v.prototype instanceof Error) as [
  string,
  new (...args: never) => Error,
][];

describe('the error module', () => {
  it('every error class there is a WaybillError', () => {
    expect(classes.length).toBeGreaterThanOrEqual(25);
    for (const [name, cls] of classes) {
      expect(cls === errors.WaybillError || cls.prototype instanceof errors.WaybillError, name).toBe(true);
    }
  });

  it('no other file in lib/ or app/ defines an error class', () => {
    const hits = execFileSync('git', ['grep', '-nE', 'class \\w+ extends (\\w*Error)\\b', '--', 'lib', 'app'], {
      encoding: 'utf8',
    })
      .trim()
      .split('\n')
      .filter((line) => !line.startsWith('lib/errors.ts:'));
    expect(hits).toEqual([]);
  });

  it('configuration and usage errors are WaybillErrors with codes, exit 2, and the API maps the input codes to 4xx', () => {
    const config = new errors.ConfigError('WAYBILL_LEASE_MS: is below 300 ms');
    const usage = new errors.UsageError('--limit: must be a whole number');
    expect([config.code, usage.code]).toEqual(['INVALID_CONFIG', 'INVALID_INPUT']);
    expect([exitCode(config), exitCode(usage), exitCode(new errors.LeaseLostError('k'))]).toEqual([2, 2, 1]);
    expect([
      STATUS_BY_CODE.INVALID_INPUT,
      STATUS_BY_CODE.FORBIDDEN,
      STATUS_BY_CODE.LEASE_LOST,
      STATUS_BY_CODE.STORE_UNAVAILABLE,
    ]).toEqual([400, 403, 409, 503]);
  });
});
