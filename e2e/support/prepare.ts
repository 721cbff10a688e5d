/**
 * What the e2e suite needs before Playwright starts the web server, done once in the runner process as the
 * config file is loaded. (Playwright starts `webServer` before `globalSetup`, so a build there would come too
 * late: the server would already have built, or served a stale build.)
 *
 * - Chromium: Debian's /usr/bin/chromium (browsers cannot be downloaded here). Missing under CI=true is a
 *   failure; elsewhere the suite is skipped with a loud message and exits 0.
 * - A throwaway SQLite database in a fresh temp dir, its URL handed to the server and the tests through the
 *   environment (Playwright's worker processes inherit it, and load this config again: they reuse it).
 * - A production build that is not older than the sources it was built from.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildIsFresh } from '../../bin/entry.mjs';
import { buildNeeded } from '../../lib/launch/dashboard';

/** Debian's chromium; WAYBILL_E2E_CHROMIUM names another build of it. */
export const CHROMIUM = process.env.WAYBILL_E2E_CHROMIUM ?? '/usr/bin/chromium';

export interface E2EEnv {
  chromium: boolean;
  dir: string;
  databaseUrl: string;
  port: number;
  baseURL: string;
  /**
   * A second server on its own database with both role tokens set: the security suite's target, and the model
   * gateway's (its WAYBILL_GATEWAY_* URLs name `upstreamPort`, where the gateway spec starts the stand-in upstream).
   */
  secured: {
    databaseUrl: string;
    port: number;
    baseURL: string;
    operatorToken: string;
    viewerToken: string;
    upstreamPort: number;
  };
}

/** Fixed and public on purpose: they guard a throwaway database on loopback for the length of a test run. */
export const E2E_OPERATOR_TOKEN = 'e2e-operator-token-0123456789abcdef';
export const E2E_VIEWER_TOKEN = 'e2e-viewer-token-0123456789abcdef';
/** The provider key the secured server's gateway sends its stand-in upstream, which no client may see. */
export const E2E_PROVIDER_KEY = 'sk-e2e-provider-key-only-the-server-holds';

export function prepare(root: string): E2EEnv {
  const ci = process.env.CI === 'true' || process.env.CI === '1';
  const chromium = existsSync(CHROMIUM);
  const port = Number(process.env.WAYBILL_E2E_PORT ?? 3210);
  const firstLoad = process.env.WAYBILL_E2E_DIR === undefined;

  if (!chromium) {
    if (ci) {
      throw new Error(
        `e2e: ${CHROMIUM} is missing. CI installs it before the tests ` +
          '(apt-get update && apt-get install -y --no-install-recommends chromium); see .ci/run.',
      );
    }
    if (firstLoad) {
      const bar = '!'.repeat(78);
      process.stderr.write(
        `\n${bar}\n  e2e SKIPPED: ${CHROMIUM} is missing, so the browser tests do not run.\n` +
          `  Install it: sudo apt-get install -y chromium   (under CI=true this is a failure)\n${bar}\n\n`,
      );
    }
  } else if (firstLoad) {
    buildIfStale(root);
    buildPackageIfStale(root);
  }
  // The server and the workers the specs start run the bins from the package's build (see buildPackageIfStale).
  if (process.env.WAYBILL_BUILT !== '0') process.env.WAYBILL_BUILT = '1';
  // Made only once the checks and the build have passed, so a failed start leaves no directory behind.
  const dir = (process.env.WAYBILL_E2E_DIR ??= mkdtempSync(join(tmpdir(), 'waybill-e2e-')));
  const databaseUrl = (process.env.WAYBILL_E2E_DATABASE_URL ??= `file:${join(dir, 'e2e.db')}`);
  const securedPort = port + 1;
  const secured = {
    databaseUrl: (process.env.WAYBILL_E2E_SECURED_DATABASE_URL ??= `file:${join(dir, 'e2e-secured.db')}`),
    port: securedPort,
    baseURL: `http://127.0.0.1:${securedPort}`,
    operatorToken: E2E_OPERATOR_TOKEN,
    viewerToken: E2E_VIEWER_TOKEN,
    upstreamPort: e2eUpstreamPort(),
  };
  return { chromium, dir, databaseUrl, port, baseURL: `http://127.0.0.1:${port}`, secured };
}

/**
 * Where the stand-in model upstream of e2e/gateway.spec.ts listens: the secured server is told it at its start,
 * before any spec runs, so it is fixed, two above the suite's port.
 */
export function e2eUpstreamPort(): number {
  return Number(process.env.WAYBILL_E2E_PORT ?? 3210) + 2;
}

/**
 * Builds under a lock (a directory holding the builder's pid): the browser suite, the package tests and
 * `npm run size` all need the build, run at once (`npm run test:e2e` beside `test:unit`) they would make two
 * `next build`s into one .next and corrupt it. The second waits, then finds the build fresh. A lock whose process is gone (a build killed with -9) is taken over.
 */
export function buildIfStale(root: string): void {
  underLock(join(root, '.next-build.lock'), 'next build', () => buildIfStaleUnlocked(root));
}

/**
 * The package's build (dist/, scripts/build-package.ts) when any bin's bundle is older than the sources, under a
 * lock of its own as the dashboard's: the unit and browser suites both run the bins from it (WAYBILL_BUILT=1),
 * and two builds at once would write into one staging directory.
 */
export function buildPackageIfStale(root: string): void {
  const fresh = () => ['cli', 'start', 'web-cluster'].every(buildIsFresh);
  if (fresh()) return;
  underLock(join(root, '.package-build.lock'), 'package build', () => {
    if (fresh()) return;
    const built = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/build-package.ts'], {
      cwd: root,
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    if (built.status !== 0) throw new Error(`scripts/build-package.ts exited ${built.status ?? built.signal}`);
  });
}

/** Runs fn holding a lock directory with this process's pid in it; a lock whose process is gone is taken over. */
function underLock(lock: string, what: string, fn: () => void): void {
  for (let waited = false; ; waited = true) {
    try {
      mkdirSync(lock);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      if (!waited) process.stderr.write(`e2e: waiting for another process's ${what} (${lock})\n`);
      if (!holderAlive(lock)) rmSync(lock, { recursive: true, force: true });
      else Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 500);
    }
  }
  try {
    writeFileSync(join(lock, 'pid'), String(process.pid));
    fn();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/** False once the lock's process is gone. A lock without a pid is being taken, unless it has been for a minute. */
function holderAlive(lock: string): boolean {
  let pid: number;
  try {
    pid = Number(readFileSync(join(lock, 'pid'), 'utf8'));
  } catch {
    try {
      return Date.now() - statSync(lock).mtimeMs < 60_000;
    } catch {
      return true; // gone already: the next mkdir takes it
    }
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function buildIfStaleUnlocked(root: string): void {
  const why = buildNeeded(root);
  if (why === null) return;
  process.stderr.write(`e2e: building the dashboard (${why}): next build\n`);
  const build = spawnSync(process.execPath, [join(root, 'node_modules', 'next', 'dist', 'bin', 'next'), 'build'], {
    cwd: root,
    stdio: 'inherit',
  });
  if (build.status !== 0)
    throw new Error(`e2e: next build failed (${build.signal ?? `exit code ${build.status}`}); its errors are above`);
}
