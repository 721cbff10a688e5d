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
 * - The optional packages are loaded only lazily, each load marked for webpack and Turbopack to leave alone: the
 *   optional peers (OpenTelemetry's) by `import()` once tracing is configured, the optional dependency
 *   (better-sqlite3) by a require as a SQLite file opens. A Next.js app that bundles waybill then builds
 *   without them, and loads them from its node_modules at run time (leaveOptionalPackagesToRunTime).
 * - dist/edge/index.js, dist/edge/engine.js: what a bundle for an edge runtime gets instead (the `edge-light`
 *   condition of package.json's exports): the same export names, and an error saying waybill needs Node.js.
 * - dist/index.d.ts, dist/engine.d.ts: tsc's declarations of the same entries, bundled by rollup-plugin-dts
 *   into files with no relative imports left to resolve, so they read the same under a consumer's
 *   `nodenext` and `bundler` resolution.
 * - dist/.built: stamped with the time the build started; bin/*.mjs in a checkout use dist only when no
 *   source is newer than that.
 */
import { execFileSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Metafile, type Plugin } from 'esbuild';
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
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  exports: Record<string, string | Record<string, string>>;
};
const RUNTIME_DEPS = new Set(
  Object.keys({ ...pkg.dependencies, ...pkg.optionalDependencies, ...pkg.peerDependencies }),
);
/** Peers a project may not have installed: OpenTelemetry's, loaded only when tracing is configured (lib/tracing.ts). */
const OPTIONAL_PEERS = Object.entries(pkg.peerDependenciesMeta ?? {})
  .filter(([, meta]) => meta.optional)
  .map(([name]) => name);
/**
 * Dependencies a project may not have: npm drops better-sqlite3 when its native build fails, and
 * `--omit=optional` leaves it out. lib/store/sqlite/driver.ts loads it as the first SQLite file opens.
 */
const OPTIONAL_DEPS = Object.keys(pkg.optionalDependencies ?? {});
/**
 * Inside an `import()`, or a require made by createRequire, these tell a bundler not to resolve the specifier at
 * build time but to leave the load to Node at run time: webpack's own comment, and Turbopack's (Next.js 16's
 * default `next build`).
 */
const LEAVE_TO_RUN_TIME = '/* webpackIgnore: true */ /* turbopackIgnore: true */';
/**
 * What the edge stubs throw as a bundle for an edge runtime loads them. Next.js evaluates an edge route's
 * modules while it collects page data, so `next build` fails with this as the error's cause.
 */
const EDGE_MESSAGE =
  "waybill needs the Node.js runtime: this module was bundled for the edge runtime; remove \"export const runtime = 'edge'\" from the route that imports waybill (or set it to 'nodejs')";

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
    plugins: [drizzleSqliteStandIn()],
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
  leaveOptionalPackagesToRunTime();
  writeEdgeStubs(result.metafile);
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

/**
 * A Next.js app bundles waybill, and its bundler resolves every import it meets, a lazy `import()` too: an
 * optional peer the project did not install failed `next build` with "Module not found" (Turbopack), though
 * waybill loads it only when tracing is configured, and so did better-sqlite3 in a project on PostgreSQL. Each
 * lazy load of an optional package gets the comments that leave it to Node at run time, where a missing package
 * is what lib/ already handles (tracing off with one warning; a DriverMissingError as a SQLite file opens). The
 * marks go on here rather than in lib/: the dashboard, which Next builds from the same sources, bundles the SDK
 * and loads better-sqlite3 as a server-external package (scripts/build-dashboard.ts), and must go on doing so.
 * Any other load of one (a static import, which no comment can leave alone, an export from, an unmarked
 * require) fails the build.
 */
function leaveOptionalPackagesToRunTime(): void {
  const quoted = (names: string[]) =>
    `"(?:${names.map((name) => name.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')).join('|')})(?:/[^"]*)?"`;
  const loads = [
    { what: 'import() of an optional peer', names: OPTIONAL_PEERS, call: String.raw`\bimport\(` },
    {
      what: 'createRequire(import.meta.url)() of an optional dependency',
      names: OPTIONAL_DEPS,
      call: String.raw`\bcreateRequire\d*\(import\.meta\.url\)\(`,
    },
  ]
    .filter((load) => load.names.length > 0)
    .map((load) => ({ ...load, lazy: new RegExp(`(${load.call})(${quoted(load.names)})`, 'g'), marked: 0 }));
  // What is left once the marked loads are taken out: a static import, an export from, a require, a call on a
  // createRequire's result, an import() the patterns above did not match.
  const mentioned = new RegExp(
    `(?:\\bfrom|\\bimport|\\bimport\\(|require\\w*\\(|\\)\\()\\s*${quoted([...OPTIONAL_PEERS, ...OPTIONAL_DEPS])}`,
  );
  for (const file of jsFiles(NEXT_DIST)) {
    const text = readFileSync(file, 'utf8');
    let out = text;
    let rest = text;
    for (const load of loads) {
      out = out.replace(load.lazy, (_, call: string, name: string) => {
        load.marked++;
        return `${call}${LEAVE_TO_RUN_TIME} ${name}`;
      });
      rest = rest.replace(load.lazy, '');
    }
    const loose = mentioned.exec(rest);
    if (loose) {
      throw new Error(
        `${basename(file)} loads an optional package other than lazily (${loads.map((l) => l.what).join('; ')}): ${loose[0]}; a bundler would resolve it at build time`,
      );
    }
    if (out !== text) writeFileSync(file, out);
  }
  for (const load of loads) {
    if (load.marked === 0) throw new Error(`no ${load.what} (${load.names.join(', ')}) found in dist`);
  }
}

/**
 * drizzle-orm's better-sqlite3 driver imports better-sqlite3 for drizzle(path), which opens the file itself.
 * Waybill always hands drizzle the handle lib/store/sqlite/driver.ts opened, so the driver bundled into dist
 * gets this stand-in: its static import would have a bundler of dist resolve better-sqlite3 at build time.
 */
function drizzleSqliteStandIn(): Plugin {
  return {
    name: 'drizzle-sqlite-stand-in',
    setup(esbuild) {
      esbuild.onResolve({ filter: /^better-sqlite3$/ }, ({ importer }) =>
        /[\\/]node_modules[\\/]drizzle-orm[\\/]/.test(importer)
          ? { path: 'better-sqlite3', namespace: 'drizzle-sqlite-stand-in' }
          : undefined,
      );
      esbuild.onLoad({ filter: /.*/, namespace: 'drizzle-sqlite-stand-in' }, () => ({
        loader: 'js',
        contents: `export default class {
  constructor() {
    throw new Error("waybill opens its SQLite files itself (lib/store/sqlite/driver.ts): drizzle(path) is not used");
  }
}
`,
      }));
    },
  };
}

/**
 * For each public entry, dist/edge/<entry>.js: every export name the entry has (a bundler checks named imports
 * against them, and one missing is an error that names no cause), and a throw with EDGE_MESSAGE, which is what
 * a route on the edge runtime meets instead of a missing `node:module`. package.json's exports map sends the
 * `edge-light` condition here.
 */
function writeEdgeStubs(metafile: Metafile): void {
  for (const name of TYPED) {
    const stub = `./dist/edge/${name}.js`;
    const entry = pkg.exports[name === 'index' ? '.' : `./${name}`];
    if (typeof entry !== 'object' || entry['edge-light'] !== stub) {
      throw new Error(`package.json's exports must send the "edge-light" condition of ${name} to ${stub}`);
    }
    const output = Object.values(metafile.outputs).find((o) => o.entryPoint === ENTRIES[name]);
    if (!output) throw new Error(`esbuild's metafile has no output for ${ENTRIES[name]}`);
    const lines = [
      `// What a bundle for an edge runtime gets for waybill's ${name === 'index' ? 'core' : name} (package.json's "edge-light" condition).`,
      `throw new Error(${JSON.stringify(EDGE_MESSAGE)});`,
      'let unavailable;',
      `export { ${output.exports.map((e) => `unavailable as ${e}`).join(', ')} };`,
    ];
    mkdirSync(join(NEXT_DIST, 'edge'), { recursive: true });
    writeFileSync(join(NEXT_DIST, 'edge', `${name}.js`), `${lines.join('\n')}\n`);
  }
}

function jsFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.js'))
    .map((f) => join(dir, f));
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
