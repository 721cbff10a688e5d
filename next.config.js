import { PHASE_DEVELOPMENT_SERVER, PHASE_PRODUCTION_BUILD } from 'next/constants.js';

/**
 * The most an action's body may carry, for Next: a quarter above the largest WAYBILL_MAX_BODY_BYTES lib/config.ts
 * allows (64 MiB), for the form around such a value (other fields, multipart framing). Fixed, because a standalone
 * build's config is fixed when it is built; the limit in force, WAYBILL_MAX_BODY_BYTES as each dashboard process
 * starts with it, is held in front of Next by lib/launch/http-guard.mjs, for bodies declared and chunked alike.
 */
const ACTION_BODY_CAP = '80mb';
/** `next dev` runs with no guard in front of it: it keeps the cap of the default limit, 1 MiB and a quarter. */
const DEV_ACTION_BODY_CAP = '1.25mb';

/** @type {(phase: string) => import('next').NextConfig} */
export default function nextConfig(phase) {
  const dev = phase === PHASE_DEVELOPMENT_SERVER;
  return {
    // .next/standalone: the server with only the files it loads (traced), what the waybill-dashboard package
    // ships so that it runs without `next` installed (scripts/build-package.ts). `npm start` in a checkout and
    // the browser suite serve the same build with next start.
    output: 'standalone',
    // Native and pooled drivers must stay outside the server bundle.
    serverExternalPackages: ['better-sqlite3', 'pg'],
    // Left out of .next/standalone: better-sqlite3's native module is built for one platform and Node, so the
    // dashboard package loads the user's own; sharp (and its libvips, 19 MB) serves next/image, which no page uses.
    // lib/ is traced for the paths its modules compute from their own URL (python-agent's client), sources
    // the server never runs: it runs the compiled bundle.
    outputFileTracingExcludes: {
      '*': [
        'lib/**',
        'node_modules/better-sqlite3/**',
        'node_modules/bindings/**',
        'node_modules/file-uri-to-path/**',
        'node_modules/sharp/**',
        'node_modules/@img/**',
      ],
    },
    // Types are checked in one place, `npm run typecheck` (tsc over the whole project, app/ included), which
    // `npm run build` and CI run before any build. next build's own pass checked the same files again: half a
    // minute of both cores for every build the browser and package suites and a first `npm start` make.
    typescript: { ignoreBuildErrors: true },
    // `next dev` serves its client assets to localhost only unless told; the dashboard is opened as 127.0.0.1.
    allowedDevOrigins: ['127.0.0.1'],
    // No source maps in a production build: they were three quarters of the shipped dashboard, and the
    // dashboard's errors are read in its own log, not in a browser's debugger. `next dev` keeps them.
    productionBrowserSourceMaps: false,
    // unauthorized() and forbidden() answer 401 and 403 from pages, server actions and route handlers alike.
    experimental: {
      authInterrupts: true,
      ...(phase === PHASE_PRODUCTION_BUILD ? { serverSourceMaps: false, turbopackSourceMaps: false } : {}),
      serverActions: {
        // Inputs, results and manual resolutions may be up to WAYBILL_MAX_BODY_BYTES, which the actions check
        // themselves and answer with a field error naming the limit; what is past a quarter above it never
        // reaches them (ACTION_BODY_CAP). allowedOrigins stays unset: same origin only.
        bodySizeLimit: dev ? DEV_ACTION_BODY_CAP : ACTION_BODY_CAP,
      },
      // proxy.ts sees every action, and Next hands it a copy of the body cut at this size (10 MB unless told), the
      // action then reading the body cut short too.
      ...(dev ? {} : { proxyClientMaxBodySize: ACTION_BODY_CAP }),
    },
  };
}
