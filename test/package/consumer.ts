/**
 * A project of someone else's: a fresh directory under os.tmpdir() with a package.json of its own, and
 * `npm install` of the tarballs (./pack.ts makes them). Then the tests run that project's files under plain
 * `node`, its `npx waybill`, and the repository's `tsc` over it.
 */
import { type SpawnOptions, spawn } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

/**
 * What a project without better-sqlite3 is told to install: the major version package.json's range allows, so
 * that moving the range to another major fails the tests that read the message until lib/ says the same.
 */
export const SQLITE_INSTALL = `better-sqlite3@${
  (
    JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { optionalDependencies: Record<string, string> }
  ).optionalDependencies['better-sqlite3']!.match(/\d+/)![0]
}`;

export interface Output {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * The parent's environment without npm's: under `npm test` every npm_* variable of the repository's own run
 * (its prefix, its package's fields) would reach the consumer's npm and node and describe the wrong project.
 */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(
      ([k]) =>
        !/^npm_/i.test(k) &&
        !k.startsWith('WAYBILL_') &&
        k !== 'DATABASE_URL' &&
        k !== 'PORT' &&
        k !== 'HOST' &&
        k !== 'INIT_CWD',
    ),
  );
  return { ...env, ...extra } as NodeJS.ProcessEnv;
}

export function run(command: string, args: string[], options: SpawnOptions & { input?: string } = {}): Promise<Output> {
  return new Promise((resolve, reject) => {
    const proc = spawn(command, args, { env: cleanEnv(), ...options, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    proc.stdout!.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    proc.stderr!.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    proc.once('error', reject);
    // A child that exits without reading its stdin (most do) closes the pipe: EPIPE here is no failure of it.
    proc.stdin!.on('error', () => {});
    proc.stdin!.end(options.input ?? '');
    proc.once('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

export function must(what: string, out: Output): Output {
  if (out.code !== 0)
    throw new Error(
      `${what} failed (${out.signal ?? `exit ${out.code}`}):\n${out.stdout.slice(-4000)}\n${out.stderr.slice(-4000)}`,
    );
  return out;
}

export interface Consumer {
  dir: string;
  file(name: string): string;
  write(name: string, text: string): void;
  /** `node <file>` in the consumer's directory, with `extra` in a clean environment. */
  node(args: string[], extra?: Record<string, string>): Promise<Output>;
  npx(args: string[], extra?: Record<string, string>): Promise<Output>;
  /** Moves node_modules/<name> (each of the names) aside while fn runs: a project that never installed it. */
  without<T>(names: string | string[], fn: () => Promise<T>): Promise<T>;
  remove(): void;
}

/**
 * A new project under os.tmpdir() with `npm install <tarballs>` done: the packages as another project gets
 * them (packed by ./pack.ts).
 */
export async function makeConsumer(tarballs: string[]): Promise<Consumer> {
  const base = mkdtempSync(join(tmpdir(), 'waybill-consumer-'));
  try {
    const dir = join(base, 'project');
    mkdirSync(dir);
    writeFileSync(
      join(dir, 'package.json'),
      `${JSON.stringify({ name: 'waybill-consumer', version: '1.0.0', private: true, type: 'module' }, null, 2)}\n`,
    );
    await installTarball(dir, tarballs);
    return consumerAt(base, dir);
  } catch (error) {
    if (!process.env.WAYBILL_KEEP_TMP) rmSync(base, { recursive: true, force: true });
    throw error;
  }
}

/**
 * `npm install <args>` in dir, as a user's would run, with what this machine needs: better-sqlite3 held at the
 * repository's version (an override in dir's package.json) so its binary can be reused (provideSqliteBinary);
 * every other dependency resolves as a new user's would, from the tarball's ranges.
 */
export async function installTarball(dir: string, args: string[]): Promise<void> {
  const manifest = join(dir, 'package.json');
  const pkg = JSON.parse(readFileSync(manifest, 'utf8')) as Record<string, unknown>;
  writeFileSync(
    manifest,
    `${JSON.stringify({ ...pkg, overrides: { 'better-sqlite3': sqliteVersion(ROOT) } }, null, 2)}\n`,
  );
  // From npm's cache, as a machine that has installed these packages before does. --offline fails when the
  // cache lacks a package's metadata (npm ci of the repository fetches tarballs, not metadata); then once
  // more preferring the cache, which asks the registry only for what is missing and fills the cache for next time.
  // It fails as ENOTCACHED, or, for a package named on the command line with no range (`zod`), as an ERESOLVE
  // against `zod@undefined`: the first of these tests to run on a fresh machine met the second.
  const install = (mode: string) =>
    run('npm', ['install', ...args, mode, '--no-audit', '--no-fund', '--ignore-scripts', '--loglevel=error'], {
      cwd: dir,
    });
  let installed = await install('--offline');
  if (installed.code !== 0 && /ENOTCACHED|@undefined/.test(installed.stderr))
    installed = await install('--prefer-offline');
  must('npm install of the tarball', installed);
  provideSqliteBinary(dir);
}

/** The Consumer for a project in dir (under base, which remove() deletes). */
export function consumerAt(base: string, dir: string): Consumer {
  return {
    dir,
    file: (name) => join(dir, name),
    write(name, text) {
      mkdirSync(dirname(join(dir, name)), { recursive: true });
      writeFileSync(join(dir, name), text);
    },
    node: (args, extra = {}) => run(process.execPath, args, { cwd: dir, env: cleanEnv(extra) }),
    npx: (args, extra = {}) => run('npx', ['--no-install', ...args], { cwd: dir, env: cleanEnv(extra) }),
    async without(names, fn) {
      const moved: { from: string; aside: string }[] = [];
      try {
        for (const name of typeof names === 'string' ? [names] : names) {
          const from = join(dir, 'node_modules', name);
          const aside = join(dir, '.aside', name);
          mkdirSync(dirname(aside), { recursive: true });
          renameSync(from, aside);
          moved.push({ from, aside });
        }
        return await fn();
      } finally {
        for (const { from, aside } of moved) renameSync(aside, from);
      }
    },
    remove: () => {
      if (!process.env.WAYBILL_KEEP_TMP) rmSync(base, { recursive: true, force: true });
    },
  };
}

/**
 * better-sqlite3's install script fetches a prebuilt binary from GitHub or compiles one (minutes of both
 * cores); this machine reaches neither GitHub nor, quickly, a compiler's worth of idle CPU. The install ran
 * with --ignore-scripts, and gets the binary the repository's own install produced: the same package version
 * on the same Node, so the file either route would have made.
 */
function provideSqliteBinary(dir: string): void {
  if (sqliteVersion(dir) !== sqliteVersion(ROOT)) {
    throw new Error(
      `better-sqlite3 ${sqliteVersion(dir)} in the consumer, ${sqliteVersion(ROOT)} in the repository: cannot reuse its binary`,
    );
  }
  const binary = join('node_modules', 'better-sqlite3', 'build', 'Release', 'better_sqlite3.node');
  if (!existsSync(join(ROOT, binary))) throw new Error(`${binary} is missing in the repository: npm ci builds it`);
  mkdirSync(dirname(join(dir, binary)), { recursive: true });
  copyFileSync(join(ROOT, binary), join(dir, binary));
}

function sqliteVersion(root: string): string {
  return (
    JSON.parse(readFileSync(join(root, 'node_modules', 'better-sqlite3', 'package.json'), 'utf8')) as {
      version: string;
    }
  ).version;
}
