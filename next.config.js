import { PHASE_PRODUCTION_BUILD } from 'next/constants.js';

/** @type {(phase: string) => import('next').NextConfig} */
export default function nextConfig(phase) {
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
        // Inputs, results and manual resolutions may be up to WAYBILL_MAX_BODY_BYTES (1 MiB by default), which
        // the actions check themselves and answer with a field error naming the limit. The form around such a
        // value (other fields, multipart framing) needs a little more, so Next's own cap sits a quarter above;
        // anything beyond it is refused by Next before an action runs. allowedOrigins stays unset: same origin only.
        bodySizeLimit: '1.25mb',
      },
    },
  };
}
