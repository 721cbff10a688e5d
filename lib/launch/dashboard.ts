/**
 * Which dashboard `npm start`, `waybill up` and `waybill dashboard` serve, and how bin/web.mjs starts it.
 *
 * - In a checkout (the package root has app/): the repository's own production build in .next, served by
 *   the repository's next (`next start`), built first when it is missing. What the browser suite runs.
 * - Installed: the `waybill-dashboard` package, found from the user's project (the directory the command
 *   runs in) as their own imports would be, then from beside this package. It holds Next's standalone
 *   server (standalone/server.js) with the modules it loads, so the project installs no `next` of its own.
 *   The library itself carries no dashboard: a project that never opens one installs none of it.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { packagePath, packageRoot } from '../package-root';

export const DASHBOARD_PACKAGE = 'waybill-dashboard';

export type Dashboard =
  /** Serve `root/.next` with `node nextBin start` (build it with `node nextBin build` while BUILD_ID is missing). */
  | { kind: 'checkout'; root: string; nextBin: string; buildId: string }
  /** Run `node server` (Next's standalone server.js) from `root`. */
  | { kind: 'package'; root: string; server: string };

/** The dashboard to serve, or why there is none: one line naming what to install, and the exit code. */
export function findDashboard(
  version: string,
  from: string = process.cwd(),
): Dashboard | { problem: string; exitCode: number } {
  const root = packageRoot();
  if (existsSync(packagePath('app'))) {
    return {
      kind: 'checkout',
      root,
      nextBin: createRequire(import.meta.url).resolve('next/dist/bin/next'),
      buildId: packagePath('.next', 'BUILD_ID'),
    };
  }
  const manifest = resolveFrom([join(from, 'package.json'), join(root, 'package.json')]);
  if (manifest === null) {
    return {
      problem: `the dashboard is a package of its own, which is not installed here: npm install ${DASHBOARD_PACKAGE}@${version}`,
      exitCode: 2,
    };
  }
  const dir = dirname(manifest);
  const installed = (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version;
  // The dashboard carries its own copy of the store code: one of another version may expect another schema.
  if (installed !== version) {
    return {
      problem: `${DASHBOARD_PACKAGE} ${installed} is installed (${dir}), and this is waybill ${version}: npm install ${DASHBOARD_PACKAGE}@${version}`,
      exitCode: 2,
    };
  }
  const server = join(dir, 'standalone', 'server.js');
  if (!existsSync(server)) {
    return {
      problem: `${dir} has no standalone/server.js: it was packed without its build (npm pack runs it at prepack)`,
      exitCode: 1,
    };
  }
  return { kind: 'package', root: join(dir, 'standalone'), server };
}

function resolveFrom(parents: string[]): string | null {
  for (const parent of parents) {
    try {
      return createRequire(parent).resolve(`${DASHBOARD_PACKAGE}/package.json`);
    } catch {
      // Not installed where this one looks: the next place, or none.
    }
  }
  return null;
}

/**
 * bin/web.mjs's arguments for a dashboard: `next start`'s flags in a checkout; for the standalone server,
 * `--server <server.js>` and the same flags, which lib/launch/web-cluster.ts hands it as the environment
 * variables it reads instead (PORT, HOSTNAME, KEEP_ALIVE_TIMEOUT).
 */
export function webArgs(dashboard: Dashboard, host: string, port: number, keepAliveMs: number): string[] {
  const flags = ['--port', String(port), '--hostname', host, '--keepAliveTimeout', String(keepAliveMs)];
  return dashboard.kind === 'package' ? ['--server', dashboard.server, ...flags] : flags;
}

/** What a checkout's production build is made from: anything here newer than .next/BUILD_ID means a rebuild. */
const BUILD_SOURCES = ['app', 'lib', 'public', 'proxy.ts', 'next.config.js', 'postcss.config.mjs', 'package-lock.json'];

/**
 * Why the checkout at `root` needs `next build` ("there is no production build", "lib/x.ts changed since the last
 * build"), or null when its build is the sources'. `npm start` and the browser suite both ask. A checkout updated
 * by `git pull` kept serving its old build: with a migration in the pull, the store was migrated by the new code
 * and refused by the old build (STORE_TOO_NEW) on every page.
 */
export function buildNeeded(root: string): string | null {
  const buildId = join(root, '.next', 'BUILD_ID');
  if (!existsSync(buildId)) return 'there is no production build';
  const builtAt = statSync(buildId).mtimeMs;
  // A directory's own time moves when a file in it is added or deleted.
  const newer = (path: string): string | null => {
    const stat = statSync(path, { throwIfNoEntry: false });
    if (!stat) return null;
    if (stat.mtimeMs > builtAt) return path;
    if (!stat.isDirectory()) return null;
    for (const entry of readdirSync(path)) {
      const found = newer(join(path, entry));
      if (found) return found;
    }
    return null;
  };
  for (const source of BUILD_SOURCES) {
    const found = newer(join(root, source));
    if (found) return `${relative(root, found)} changed since the last build`;
  }
  return null;
}
