/**
 * `npm run build:package`, run by npm at `prepack`: what the tarball ships, built from the sources.
 *
 * - dist/*.js: ESM bundles made by esbuild, one per entry (the two public ones, the CLI, the launchers), code
 *   shared between them split into dist/chunks. Every bare import stays external and must be a dependency
 *   (checked below), so the consumer's npm installs what the bundles load. Each store backend is its own
 *   chunk behind a dynamic import: a project loads only the driver its URL names.
 * - dist/index.d.ts, dist/engine.d.ts: tsc's declarations of the same entries, bundled by rollup-plugin-dts
 *   into files with no relative imports left to resolve, so they read the same under a consumer's
 *   `nodenext` and `bundler` resolution.
 * - .next: the dashboard's production build (next build, only when the sources are newer than it, as the
 *   browser suite does), with its links to externals made portable (see portableExternals) and the next
 *   version that built it (.next/waybill-build.json).
 * - dist/.built: stamped with the time the build started; bin/*.mjs in a checkout use dist only when no
 *   source is newer than that.
 */
import { execFileSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { builtinModules, createRequire } from 'node:module';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { rollup } from 'rollup';
import { dts } from 'rollup-plugin-dts';
import { buildIfStale } from '../e2e/support/prepare';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIST = join(ROOT, 'dist');
/** Built beside dist and swapped in whole: a bin started from the old build keeps finding its lazy chunks. */
const NEXT_DIST = join(ROOT, '.tmp', 'package-dist');
const DTS_TMP = join(ROOT, '.tmp', 'package-dts');
const started = new Date();
const say = (line: string) => process.stderr.write(`build-package: ${line}\n`);

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
};
const RUNTIME_DEPS = new Set(
  Object.keys({ ...pkg.dependencies, ...pkg.optionalDependencies, ...pkg.peerDependencies }),
);

/** Public entries and the bins' entries; the names are the file names under dist/. */
const ENTRIES = {
  index: 'lib/index.ts',
  engine: 'lib/engine/index.ts',
  cli: 'lib/cli/main.ts',
  start: 'lib/launch/start.ts',
  'web-cluster': 'lib/launch/web-cluster.ts',
};
const TYPED = ['index', 'engine'] as const;
/**
 * Plain JavaScript a bundle loads by its own URL rather than imports (`node --import <file>`, which esbuild
 * cannot follow): copied beside the entry that names it, and that entry must name it still (checked below).
 */
const BESIDE: { file: string; entry: keyof typeof ENTRIES }[] = [
  { file: 'lib/launch/http-guard.mjs', entry: 'web-cluster' },
];

rmSync(NEXT_DIST, { recursive: true, force: true });
await bundleJs();
await bundleDeclarations();
writeFileSync(join(NEXT_DIST, '.built'), `${started.toISOString()}\n`);
utimesSync(join(NEXT_DIST, '.built'), started, started);
swapIn();
buildIfStale(ROOT);
portableExternals();
recordNextVersion();
say('done');

async function bundleJs(): Promise<void> {
  const result = await build({
    absWorkingDir: ROOT,
    entryPoints: Object.fromEntries(Object.entries(ENTRIES).map(([name, path]) => [name, join(ROOT, path)])),
    outdir: NEXT_DIST,
    chunkNames: 'chunks/[name]-[hash]',
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    packages: 'external',
    sourcemap: 'linked',
    metafile: true,
    logLevel: 'warning',
  });
  // A bare import the consumer's npm would not install (a devDependency such as tsx, or next/* from a layer
  // that must not know it) fails the build here instead of the user's first run.
  const unknown = new Set<string>();
  for (const output of Object.values(result.metafile.outputs)) {
    for (const { path, external } of output.imports) {
      if (!external || path.startsWith('node:') || builtinModules.includes(path)) continue;
      const name = path.startsWith('@') ? path.split('/').slice(0, 2).join('/') : path.split('/')[0]!;
      if (!RUNTIME_DEPS.has(name)) unknown.add(path);
    }
  }
  if (unknown.size > 0) throw new Error(`dist imports packages that are not dependencies: ${[...unknown].join(', ')}`);
  for (const { file, entry } of BESIDE) {
    if (!readFileSync(join(NEXT_DIST, `${entry}.js`), 'utf8').includes(`./${basename(file)}`)) {
      throw new Error(
        `dist/${entry}.js no longer loads ./${basename(file)}: the bundle moved it (a shared chunk?) or dropped it`,
      );
    }
    copyFileSync(join(ROOT, file), join(NEXT_DIST, basename(file)));
  }
  say(`bundled ${Object.keys(ENTRIES).join(', ')}; beside them ${BESIDE.map((b) => basename(b.file)).join(', ')}`);
}

async function bundleDeclarations(): Promise<void> {
  rmSync(DTS_TMP, { recursive: true, force: true });
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  execFileSync(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.build.json')], { cwd: ROOT, stdio: 'inherit' });
  const bundle = await rollup({
    input: Object.fromEntries(TYPED.map((name) => [name, join(DTS_TMP, ENTRIES[name].replace(/\.ts$/, '.d.ts'))])),
    plugins: [dts()],
    // Types of dependencies are the consumer's to resolve, from its own node_modules.
    external: (id) => !id.startsWith('.') && !id.startsWith('/'),
  });
  await bundle.write({
    dir: NEXT_DIST,
    format: 'es',
    entryFileNames: '[name].d.ts',
    chunkFileNames: 'chunks/[name]-[hash].d.ts',
  });
  await bundle.close();
  rmSync(DTS_TMP, { recursive: true, force: true });
  say(`declarations: ${TYPED.map((name) => `dist/${name}.d.ts`).join(', ')}`);
}

/**
 * A .next build is served only by the next that made it. package.json pins next exactly; this records the
 * version too, so `waybill dashboard` can say what is wrong if a project's overrides installed another.
 */
function recordNextVersion(): void {
  const { version } = createRequire(import.meta.url)('next/package.json') as { version: string };
  writeFileSync(join(ROOT, '.next', 'waybill-build.json'), `${JSON.stringify({ next: version })}\n`);
}

/** Two renames, so dist/ is never half-written: the chunks of a build whose sources did not change keep their names. */
function swapIn(): void {
  const old = join(ROOT, '.tmp', 'package-dist-old');
  rmSync(old, { recursive: true, force: true });
  if (existsSync(DIST)) renameSync(DIST, old);
  renameSync(NEXT_DIST, DIST);
  rmSync(old, { recursive: true, force: true });
}

/**
 * next build (Turbopack) loads each server-external package (better-sqlite3, pg, pino) under a hashed name,
 * `require("pg-587764f78a6c7a9c")`, which .next/node_modules/pg-587764f78a6c7a9c answers: a symlink to
 * ../../node_modules/pg. npm pack drops symlinks, and installed under node_modules/waybill the link would
 * point at node_modules/waybill/node_modules/pg, where npm usually does not put pg. Each link becomes a
 * one-line package that requires the real one by its name, found by Node's usual lookup from wherever the
 * package is installed (the checkout's own node_modules here, the consumer's when installed).
 */
function portableExternals(): void {
  const dir = join(ROOT, '.next', 'node_modules');
  if (!existsSync(dir)) return;
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (!lstatSync(path).isSymbolicLink()) continue;
    const target = basename(readlinkSync(path));
    const scoped = entry.startsWith('@');
    if (scoped || !entry.startsWith(`${target}-`))
      throw new Error(`.next/node_modules/${entry}: unexpected link to ${readlinkSync(path)}`);
    rmSync(path);
    mkdirSync(path);
    writeFileSync(join(path, 'package.json'), `${JSON.stringify({ name: entry, private: true, main: 'index.js' })}\n`);
    writeFileSync(
      join(path, 'index.js'),
      `// ${entry}: the dashboard's name for ${target} (see scripts/build-package.ts)\nmodule.exports = require(${JSON.stringify(target)});\n`,
    );
  }
}
