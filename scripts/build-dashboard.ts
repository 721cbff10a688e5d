/**
 * `npm run build:dashboard`, run by npm at the `prepack` of packages/dashboard: the `waybill-dashboard`
 * package's standalone/ from the repository's one production build (next build, only when the sources are
 * newer than it, as the browser suite does; next.config.js asks for `output: 'standalone'`).
 *
 * - standalone/: Next's .next/standalone (server.js and only the modules the server loads, traced), with
 *   the static assets and public/ it does not copy itself, so it runs with no `next` installed.
 * - Each externals link (.next/node_modules/<name>-<hash>, a symlink npm pack would drop) becomes a one-line
 *   package that requires the real one by name, found from wherever the dashboard is installed.
 * - No native module inside: better-sqlite3 is left out of the trace (next.config.js) and resolved from the
 *   user's project, where npm built it for their platform and Node; the build fails if any .node file or
 *   source map got in.
 * - Each traced package keeps its license file, which the trace leaves behind.
 */
import {
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { basename, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildIfStale } from '../e2e/support/prepare';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const PACKAGE = join(ROOT, 'packages', 'dashboard');
const OUT = join(PACKAGE, 'standalone');
/** Assembled beside the old one and swapped in whole. */
const NEXT_OUT = join(ROOT, '.tmp', 'dashboard-standalone');
const say = (line: string) => process.stderr.write(`build-dashboard: ${line}\n`);

const version = (dir: string) =>
  (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string }).version;
if (version(PACKAGE) !== version(ROOT)) {
  // waybill dashboard serves only a dashboard of its own version (lib/launch/dashboard.ts).
  throw new Error(`packages/dashboard is version ${version(PACKAGE)}, the repository ${version(ROOT)}: make them one`);
}

buildIfStale(ROOT);
const standalone = join(ROOT, '.next', 'standalone');
if (!existsSync(join(standalone, 'server.js'))) {
  throw new Error('.next/standalone/server.js is missing: next.config.js must say output: "standalone"');
}
rmSync(NEXT_OUT, { recursive: true, force: true });
cpSync(standalone, NEXT_OUT, { recursive: true, verbatimSymlinks: true });
cpSync(join(ROOT, '.next', 'static'), join(NEXT_OUT, '.next', 'static'), { recursive: true });
if (existsSync(join(ROOT, 'public'))) cpSync(join(ROOT, 'public'), join(NEXT_OUT, 'public'), { recursive: true });
// The traced copy of the repository's package.json would make a second "waybill" inside the dashboard;
// server.js needs only to be read as a module.
writeFileSync(join(NEXT_OUT, 'package.json'), `${JSON.stringify({ private: true, type: 'module' })}\n`);
portableExternals(join(NEXT_OUT, '.next', 'node_modules'));
leaveToTheUser(join(NEXT_OUT, 'node_modules'));
keepLicenses(join(NEXT_OUT, 'node_modules'));
refuseUnwanted(NEXT_OUT);
rmSync(OUT, { recursive: true, force: true });
renameSync(NEXT_OUT, OUT);
cpSync(join(ROOT, 'LICENSE'), join(PACKAGE, 'LICENSE'));
say(`done: ${relative(ROOT, OUT)}`);

/**
 * next build (Turbopack) loads each server-external package (better-sqlite3, pg, pino) under a hashed name,
 * `require("pg-587764f78a6c7a9c")`, which .next/node_modules/pg-587764f78a6c7a9c answers: a symlink to
 * ../../node_modules/pg. npm pack drops symlinks, and better-sqlite3 is not in the traced node_modules at all.
 * Each link becomes a one-line package that requires the real one by its name, found by Node's usual lookup:
 * the traced copy beside it, or the user's own (better-sqlite3).
 */
function portableExternals(dir: string): void {
  if (!existsSync(dir)) return;
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (!lstatSync(path).isSymbolicLink()) continue;
    const target = basename(readlinkSync(path));
    if (entry.startsWith('@') || !entry.startsWith(`${target}-`))
      throw new Error(`.next/node_modules/${entry}: unexpected link to ${readlinkSync(path)}`);
    rmSync(path);
    mkdirSync(path);
    writeFileSync(join(path, 'package.json'), `${JSON.stringify({ name: entry, private: true, main: 'index.js' })}\n`);
    writeFileSync(
      join(path, 'index.js'),
      `// ${entry}: the dashboard's name for ${target} (see scripts/build-dashboard.ts)\nmodule.exports = require(${JSON.stringify(target)});\n`,
    );
  }
}

/** Copies each traced package's license file from the package it was traced from. */
function keepLicenses(dir: string): void {
  for (const name of packagesIn(dir)) {
    const from = join(ROOT, 'node_modules', name);
    const license = existsSync(from) ? readdirSync(from).find((f) => /^licen[cs]e/i.test(f)) : undefined;
    if (license && !existsSync(join(dir, name, license))) cpSync(join(from, license), join(dir, name, license));
  }
}

function packagesIn(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) =>
    entry.startsWith('@') ? readdirSync(join(dir, entry)).map((inner) => `${entry}/${inner}`) : [entry],
  );
}

/** Source maps (three quarters of the old package) and native modules (built for this machine only). */
/**
 * better-sqlite3 (and the two packages that find its binary) is the user's own, built by their npm for their
 * platform: next.config.js leaves it out of the routes' traces, and a trace it reaches anyway (the
 * instrumentation hook opens the store) does not put it in the package.
 */
function leaveToTheUser(dir: string): void {
  for (const name of ['better-sqlite3', 'bindings', 'file-uri-to-path'])
    rmSync(join(dir, name), { recursive: true, force: true });
}

function refuseUnwanted(dir: string): void {
  const found: string[] = [];
  const walk = (at: string) => {
    for (const item of readdirSync(at, { withFileTypes: true })) {
      const path = join(at, item.name);
      if (item.isDirectory()) walk(path);
      else if (/\.(map|node)$/.test(item.name)) found.push(relative(dir, path));
    }
  };
  walk(dir);
  if (found.length > 0)
    throw new Error(
      `the dashboard would ship ${found.length} source maps or native modules: ${found.slice(0, 5).join(', ')}`,
    );
}
