/**
 * `npm run build:package`, run by npm at `prepack`: what the `waybill` tarball ships, built from the sources.
 * The dashboard is a package of its own (packages/dashboard, scripts/build-dashboard.ts).
 *
 * - dist/*.js: ESM bundles made by esbuild, one per entry (the two public ones, the CLI, the launchers), code
 *   shared between them split into dist/chunks. The package's dependencies stay external, so the consumer's
 *   npm installs what the bundles load; drizzle-orm is bundled (BUNDLED): its 17 MB of every dialect and
 *   driver were half of what `npm install waybill` put on disk, and no public type names it. Anything else
 *   from node_modules in a bundle (a devDependency such as tsx, or next/* from a layer that must not know it)
 *   fails the build. Each store backend is its own chunk behind a dynamic import: a project loads only the
 *   driver its URL names.
 * - dist/index.d.ts, dist/engine.d.ts: tsc's declarations of the same entries, bundled by rollup-plugin-dts
 *   into files with no relative imports left to resolve, so they read the same under a consumer's
 *   `nodenext` and `bundler` resolution.
 * - dist/.built: stamped with the time the build started; bin/*.mjs in a checkout use dist only when no
 *   source is newer than that.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, readFileSync, renameSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { rollup } from 'rollup';
import { dts } from 'rollup-plugin-dts';

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
/** Packages bundled into dist rather than installed; each one's license travels in licenses/ (THIRD-PARTY.md). */
const BUNDLED = new Set(['drizzle-orm']);

/** Public entries and the bins' entries; the names are the file names under dist/. */
const ENTRIES = {
  index: 'lib/index.ts',
  engine: 'lib/engine/index.ts',
  cli: 'lib/cli/main.ts',
  start: 'lib/launch/start.ts',
  'web-cluster': 'lib/launch/web-cluster.ts',
  // An entry of its own so that the public entries can import it first (see checkZodFirst).
  'zod-version': 'lib/zod-version.ts',
};
/** The entries a project on zod 3 may load; each must say so before any module builds a zod 4 schema. */
const ZOD_CHECKED = ['index', 'engine', 'cli'] as const;
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
    external: [...RUNTIME_DEPS].flatMap((name) => [name, `${name}/*`]),
    sourcemap: 'linked',
    metafile: true,
    logLevel: 'warning',
  });
  // A package bundled by accident (a devDependency such as tsx, or next/* from a layer that must not know it)
  // fails the build here, instead of growing the package or failing the user's first run.
  const unexpected = new Set<string>();
  for (const input of Object.keys(result.metafile.inputs)) {
    const name = input.match(/(?:^|\/)node_modules\/((?:@[^/]+\/)?[^/]+)\//)?.[1];
    if (name && !BUNDLED.has(name)) unexpected.add(name);
  }
  if (unexpected.size > 0)
    throw new Error(
      `dist would bundle packages that are neither dependencies nor BUNDLED: ${[...unexpected].join(', ')}`,
    );
  checkZodFirst();
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

/**
 * lib/index.ts, lib/engine/index.ts and lib/cli/main.ts import ../zod-version first, so that a project on
 * zod 3 is told what to install instead of a TypeError from inside zod. Across chunks esbuild does not keep
 * that order (a chunk that builds schemas may be imported before it), so each entry imports the check's own
 * entry before anything else: ESM evaluates a module's imports in the order they are written. On the first
 * line, beside what is there: the source map's lines stay where they were.
 */
function checkZodFirst(): void {
  for (const name of ZOD_CHECKED) {
    const path = join(NEXT_DIST, `${name}.js`);
    writeFileSync(path, `import "./zod-version.js"; ${readFileSync(path, 'utf8')}`);
  }
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
    // A type the entries use but do not export ends up in a shared chunk under a private name, and a
    // consumer's declaration emit that needs it fails with TS2742: each such warning fails the build.
    onLog(level, log, handler) {
      if (level === 'warn' && /private shared type exports/.test(log.message)) {
        throw new Error(`declarations: ${log.message}`);
      }
      handler(level, log);
    },
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

/** Two renames, so dist/ is never half-written: the chunks of a build whose sources did not change keep their names. */
function swapIn(): void {
  const old = join(ROOT, '.tmp', 'package-dist-old');
  rmSync(old, { recursive: true, force: true });
  if (existsSync(DIST)) renameSync(DIST, old);
  renameSync(NEXT_DIST, DIST);
  rmSync(old, { recursive: true, force: true });
}
