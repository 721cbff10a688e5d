/**
 * A command workflow's program as a process tree the worker owns: the program runs in a process group of its
 * own, under a watchdog that leads the group, in a fresh private working directory.
 *
 * Why a group: a program's children (a shell's, a model server's) hold its token too. Stopping signals the
 * group, so they hear it with the program; and once the program has exited, whatever it left in the group is
 * killed, so no copy of it outlives its attempt and its output pipes close.
 *
 * Why a watchdog: when the worker dies (SIGKILL, a crash, the OOM killer) nothing of it runs to stop the
 * program, and the next worker would start the same run's program beside it. The watchdog is a tiny node
 * process the worker spawns with a pipe as its stdin: the kernel closes the pipe when the worker dies, however
 * it dies, and the watchdog then SIGKILLs the group, itself included — the program dies with its worker, as a
 * step in the worker's own process would. It ignores SIGTERM (meant for the program), runs as the worker's
 * user (a program of another user cannot signal it), and passes the program's exit on as its own.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ProgramUser } from './program-user';

/**
 * Run with `node -e WATCHDOG uid gid command args…` (uid and gid `-` for the worker's own); the program's
 * environment is the watchdog's, its input is WAYBILL_INPUT on its stdin.
 */
const WATCHDOG = `
const { spawn } = require('node:child_process');
const [uid, gid, command, ...args] = process.argv.slice(1);
const killGroup = () => { try { process.kill(-process.pid, 'SIGKILL'); } catch {} process.exit(137); };
for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(signal, () => {});
process.stdin.on('end', killGroup).on('error', killGroup).resume();
const child = spawn(command, args, {
  stdio: ['pipe', 'inherit', 'inherit'],
  ...(uid === '-' ? {} : { uid: Number(uid), gid: Number(gid) }),
});
child.on('error', (error) => { process.stderr.write('cannot start ' + command + ': ' + error.message + '\\n'); process.exit(127); });
child.stdin.on('error', () => {});
child.stdin.end((process.env.WAYBILL_INPUT ?? 'null') + '\\n');
child.on('exit', (code, signal) => {
  if (signal) { process.removeAllListeners(signal); process.kill(process.pid, signal); }
  process.exit(code ?? 128);
});
`;

export interface ProgramProcess {
  /** The watchdog's pid, which is the group's id. */
  readonly pid: number | undefined;
  readonly child: ChildProcessWithoutNullStreams;
  /** Signals every process of the group (ESRCH ignored: nothing is left). */
  signal(signal: NodeJS.Signals): void;
  /** Kills what is left of the group and removes the working directory; once the program has exited. */
  cleanUp(): void;
}

/**
 * Spawns `command` as `user` (null: the worker's own) in `cwd`, or in a fresh directory of its own under the
 * system's temporary directory when `cwd` is undefined; `env` is all of its environment.
 */
export function spawnProgram(
  command: readonly string[],
  options: { env: Record<string, string>; cwd: string | undefined; user: ProgramUser | null },
): ProgramProcess {
  const { user } = options;
  const privateDir = options.cwd === undefined ? makePrivateDir(user) : undefined;
  const cwd = options.cwd ?? privateDir!;
  const env = privateDir === undefined ? options.env : { HOME: privateDir, TMPDIR: privateDir, ...options.env };
  const child = spawn(
    process.execPath,
    ['-e', WATCHDOG, user ? String(user.uid) : '-', user ? String(user.gid) : '-', ...command],
    // detached: a session and process group of its own, led by the watchdog, that the terminal's Ctrl-C
    // does not reach either (the worker drains on it, and stops the program itself).
    { cwd, env: env as NodeJS.ProcessEnv, detached: true, stdio: ['pipe', 'pipe', 'pipe'] },
  );
  const signal = (name: NodeJS.Signals) => {
    if (child.pid === undefined) return;
    try {
      process.kill(-child.pid, name);
    } catch {
      // ESRCH: the group is empty.
    }
  };
  return {
    pid: child.pid,
    child,
    signal,
    cleanUp() {
      signal('SIGKILL');
      if (privateDir !== undefined) rmSync(privateDir, { recursive: true, force: true });
    },
  };
}

/** mkdtemp's directory is 0700 and named at random; handed to the program's user, it is theirs alone. */
function makePrivateDir(user: ProgramUser | null): string {
  const dir = mkdtempSync(join(tmpdir(), 'waybill-program-'));
  if (user) chownSync(dir, user.uid, user.gid);
  return dir;
}
