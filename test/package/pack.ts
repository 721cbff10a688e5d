/**
 * `npm pack` of the repository's two packages, `waybill` (the root) and `waybill-dashboard`
 * (packages/dashboard, whose prepack builds the dashboard: minutes), done once and shared: by every test file
 * of test/package in a vitest run, by the next run while no source changed, and by `npm run size`. The
 * tarballs are kept under os.tmpdir() in a directory named for a hash of every file they are made from, so a
 * changed source is a new directory and a fresh pack; a lock directory beside it keeps two processes from
 * packing (and building into the same .tmp/ and .next) at once.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { must, ROOT, run } from './consumer';

export interface Packed {
  tarball: string;
  /** Every path in the tarball, without the leading `package/`. */
  files: string[];
}

/**
 * What the tarballs are made of: the package's files, the dashboard's sources, and what builds them. A file
 * outside these that changes the output is a stale cache, so the list errs towards more.
 */
const SOURCES = [
  'lib',
  'bin',
  'drizzle',
  'licenses',
  'app',
  'public',
  'scripts',
  'packages/dashboard/package.json',
  'packages/dashboard/README.md',
  'e2e/support/prepare.ts',
  'package.json',
  'package-lock.json',
  'README.md',
  'LICENSE',
  'next.config.js',
  'postcss.config.mjs',
  'proxy.ts',
  'instrumentation.ts',
  'tsconfig.json',
  'tsconfig.build.json',
];

/** Tarballs unused this long are someone's old sources: removed when a new pack is made. */
const STALE_MS = 24 * 3600_000;

export async function packBoth(): Promise<{ waybill: Packed; dashboard: Packed }> {
  const key = sourceHash();
  const dir = join(tmpdir(), `waybill-pack-${key}`);
  const lock = `${dir}.lock`;
  await acquire(lock);
  try {
    if (!existsSync(join(dir, 'done'))) {
      pruneStale();
      const staging = `${dir}.staging`;
      rmSync(staging, { recursive: true, force: true });
      mkdirSync(staging, { recursive: true });
      must('npm pack (waybill)', await run('npm', ['pack', '--pack-destination', staging], { cwd: ROOT }));
      must(
        'npm pack (waybill-dashboard)',
        await run('npm', ['pack', '--pack-destination', staging], { cwd: join(ROOT, 'packages', 'dashboard') }),
      );
      writeFileSync(join(staging, 'done'), `${new Date().toISOString()}\n`);
      rmSync(dir, { recursive: true, force: true });
      renameSync(staging, dir);
    }
    const tarballs = readdirSync(dir).filter((f) => f.endsWith('.tgz'));
    const pick = async (pattern: RegExp): Promise<Packed> => {
      const found = tarballs.filter((f) => pattern.test(f));
      if (found.length !== 1) throw new Error(`${dir} holds ${found.length} tarballs matching ${pattern}`);
      const tarball = join(dir, found[0]!);
      const files = must('tar', await run('tar', ['-tzf', tarball]))
        .stdout.split('\n')
        .filter(Boolean)
        .map((p) => p.replace(/^package\//, ''));
      return { tarball, files };
    };
    return { waybill: await pick(/^waybill-\d/), dashboard: await pick(/^waybill-dashboard-\d/) };
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/** sha256 over the path and bytes of every source file, in a fixed order. */
function sourceHash(): string {
  const hash = createHash('sha256');
  const add = (path: string) => {
    if (!existsSync(path)) return;
    if (statSync(path).isDirectory()) {
      for (const entry of readdirSync(path).sort()) add(join(path, entry));
      return;
    }
    hash.update(`${relative(ROOT, path)}\0`);
    hash.update(readFileSync(path));
  };
  for (const source of SOURCES) add(join(ROOT, source));
  return hash.digest('hex').slice(0, 16);
}

function pruneStale(): void {
  for (const entry of readdirSync(tmpdir())) {
    if (!/^waybill-pack-[0-9a-f]{16}$/.test(entry)) continue;
    const path = join(tmpdir(), entry);
    if (Date.now() - statSync(path).mtimeMs > STALE_MS && !existsSync(`${path}.lock`))
      rmSync(path, { recursive: true, force: true });
  }
}

/** mkdir is atomic: whoever creates the directory holds the lock; a holder that died leaves its pid behind. */
async function acquire(lock: string): Promise<void> {
  for (;;) {
    try {
      mkdirSync(lock);
      writeFileSync(join(lock, 'pid'), String(process.pid));
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    let holder = Number.NaN;
    try {
      holder = Number(readFileSync(join(lock, 'pid'), 'utf8'));
    } catch {
      // Created, pid not written yet: look again.
    }
    if (Number.isInteger(holder) && holder > 0 && !pidAlive(holder)) rmSync(lock, { recursive: true, force: true });
    else await new Promise((r) => setTimeout(r, 500));
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
