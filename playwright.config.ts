/**
 * The browser suite: the production build served by `node bin/start.mjs` (no worker, no demo) on a
 * throwaway SQLite database; the tests start and kill real `waybill worker` processes against the same file.
 * Setup (chromium check, temp database, build if stale) is in e2e/support/prepare.ts.
 */
import { fileURLToPath } from 'node:url';
import { defineConfig } from '@playwright/test';
import { CHROMIUM, E2E_PROVIDER_KEY, prepare } from './e2e/support/prepare';

const root = fileURLToPath(new URL('.', import.meta.url));
const e2e = prepare(root);
const ci = process.env.CI === 'true' || process.env.CI === '1';

export default defineConfig({
  testDir: 'e2e',
  outputDir: 'test-results',
  globalTeardown: './e2e/support/teardown.ts',
  // The tests share one server and one database, and kill workers: one at a time.
  workers: 1,
  fullyParallel: false,
  forbidOnly: ci,
  retries: 0,
  timeout: 120_000,
  expect: { timeout: 15_000 },
  reporter: [['list']],
  use: {
    baseURL: e2e.baseURL,
    // The pages' pulsing dots (live, claimed) animate only for motion-safe users. An endless animation keeps
    // chromium drawing frames for as long as the page is open, which the specs would pay for on both cores.
    reducedMotion: 'reduce',
    browserName: 'chromium',
    trace: 'retain-on-failure',
    screenshot: 'only-on-failure',
    launchOptions: {
      executablePath: CHROMIUM,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
      ],
    },
  },
  // Without chromium the specs skip themselves; no server is started for them.
  webServer: e2e.chromium
    ? [
        server({ DATABASE_URL: e2e.databaseUrl, PORT: String(e2e.port), HOST: '127.0.0.1' }),
        // Signed-in roles, 401/403, the HTTP API, the model gateway's /v1: a server with both tokens on a
        // database of its own, its upstreams the stand-in e2e/gateway.spec.ts starts on a port fixed here.
        server({
          DATABASE_URL: e2e.secured.databaseUrl,
          PORT: String(e2e.secured.port),
          HOST: '127.0.0.1',
          WAYBILL_OPERATOR_TOKEN: e2e.secured.operatorToken,
          WAYBILL_VIEWER_TOKEN: e2e.secured.viewerToken,
          WAYBILL_GATEWAY_OPENAI_URL: `http://127.0.0.1:${e2e.secured.upstreamPort}/v1`,
          WAYBILL_GATEWAY_OPENAI_KEY: E2E_PROVIDER_KEY,
          WAYBILL_GATEWAY_ANTHROPIC_URL: `http://127.0.0.1:${e2e.secured.upstreamPort}`,
          WAYBILL_GATEWAY_ANTHROPIC_KEY: E2E_PROVIDER_KEY,
        }),
      ]
    : undefined,
});

function server(env: Record<string, string>) {
  return {
    command: 'node bin/start.mjs --no-worker --no-demo',
    cwd: root,
    env,
    // start.mjs prints this once next start accepts connections (and builds first if .next is missing).
    wait: { stdout: /Waybill is running at/ },
    timeout: 300_000,
    reuseExistingServer: false,
    stdout: 'ignore' as const,
    stderr: 'pipe' as const,
    // SIGTERM lets start.mjs stop next start itself; a SIGKILL of the group would miss it (it runs detached).
    gracefulShutdown: { signal: 'SIGTERM' as const, timeout: 20_000 },
  };
}
