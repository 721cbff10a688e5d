/**
 * Next's caps for an action's body are fixed when the dashboard is built (next.config.js; a standalone build's
 * config cannot change after), while WAYBILL_MAX_BODY_BYTES is read when it starts: the caps must hold what the
 * guard lets through at the largest limit lib/config.ts allows, else a raised limit is answered 413 by Next,
 * unread, and the form loses its text. e2e/body-limit.spec.ts serves the build with a raised limit. `next dev`,
 * with no guard in front of it, keeps the default limit's cap.
 */
import type { NextConfig } from 'next';
import { PHASE_DEVELOPMENT_SERVER, PHASE_PRODUCTION_BUILD, PHASE_PRODUCTION_SERVER } from 'next/constants.js';
import { describe, expect, it } from 'vitest';
import { MAX_BODY_BYTES_CEILING } from '../../lib/config';
import { guardBodyBytes } from '../../lib/launch/web-cluster';

const MiB = 1024 * 1024;

async function nextConfig(phase: string): Promise<NextConfig> {
  const module = (await import(new URL('../../next.config.js', import.meta.url).href)) as {
    default: (phase: string) => NextConfig;
  };
  return module.default(phase);
}

/** A size as next.config.js writes it ("80mb", "1.25mb"), in bytes: Next's `bytes` counts a megabyte as 2^20. */
function bytesOf(size: unknown): number {
  const match = /^(\d+(?:\.\d+)?)mb$/.exec(String(size));
  if (!match) throw new Error(`not a size in mb: ${String(size)}`);
  return Number(match[1]) * MiB;
}

describe("Next's caps for an action's body", () => {
  it('hold, in a build and at next start, what the guard lets through at the largest WAYBILL_MAX_BODY_BYTES', async () => {
    const most = guardBodyBytes(MAX_BODY_BYTES_CEILING);
    expect(most).toBe(80 * MiB);
    for (const phase of [PHASE_PRODUCTION_BUILD, PHASE_PRODUCTION_SERVER]) {
      const { experimental } = await nextConfig(phase);
      expect(bytesOf(experimental?.serverActions?.bodySizeLimit), phase).toBe(most);
      // The proxy's copy of the body is cut at its own cap, and the action would read it cut too.
      expect(bytesOf(experimental?.proxyClientMaxBodySize), phase).toBe(most);
    }
  });

  it('are, under next dev, what the guard lets through at the default limit', async () => {
    const { experimental } = await nextConfig(PHASE_DEVELOPMENT_SERVER);
    expect(bytesOf(experimental?.serverActions?.bodySizeLimit)).toBe(guardBodyBytes(1 * MiB));
    expect(experimental?.proxyClientMaxBodySize).toBeUndefined();
  });

  it('leave the guard at least what the default limit needs, and a quarter above any larger limit', () => {
    expect(guardBodyBytes(1024)).toBe(1.25 * MiB);
    expect(guardBodyBytes(1 * MiB)).toBe(1.25 * MiB);
    expect(guardBodyBytes(4 * MiB)).toBe(5 * MiB);
  });
});
