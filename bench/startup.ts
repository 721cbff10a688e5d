/**
 * How long `waybill --help` takes from a shell: `node bin/waybill.mjs --help`, wall time to exit, beside
 * `node -e 0` measured interleaved (what any Node program pays to start on this machine, under its load).
 * The bin runs dist/cli.js when a fresh build exists (bin/entry.mjs), else the sources through tsx; the
 * figure says which it measured.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { runsBuilt } from '../bin/entry.mjs';
import { median } from './stats';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = fileURLToPath(new URL('../bin/waybill.mjs', import.meta.url));

export interface StartupFigure {
  /** Median ms from spawn to exit of `waybill --help`. */
  helpMs: number;
  /** Median ms of `node -e 0`, measured in the same rounds. */
  nodeMs: number;
  /** Which code the bin ran. */
  ran: 'dist' | 'sources via tsx';
}

export function benchStartup(rounds: number): StartupFigure {
  const time = (args: string[]) => {
    const started = process.hrtime.bigint();
    const out = spawnSync(process.execPath, args, {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, WAYBILL_BUILT: '1' },
    });
    if (out.status !== 0) throw new Error(`node ${args.join(' ')} exited ${out.status}: ${out.stderr}`);
    return Number(process.hrtime.bigint() - started) / 1e6;
  };
  process.env.WAYBILL_BUILT = '1'; // what the spawned bins see: the build, when it is fresh
  const ran = runsBuilt('cli') ? 'dist' : 'sources via tsx';
  time([BIN, '--help']); // the first run reads every file from disk; later ones, like a user's, hit the page cache
  const help: number[] = [];
  const node: number[] = [];
  for (let i = 0; i < rounds; i++) {
    node.push(time(['-e', '0']));
    help.push(time([BIN, '--help']));
  }
  const round = (ms: number) => Math.round(ms * 10) / 10;
  return { helpMs: round(median(help)), nodeMs: round(median(node)), ran };
}
