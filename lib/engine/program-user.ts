/**
 * Who a command workflow's program runs as. The program is the least trusted code in the system, and what
 * keeps it from the worker's secrets is the kernel's rule that a process may read another's environment,
 * open files and working directory (/proc/<pid>/environ, fd, cwd) only as the same user or with
 * CAP_SYS_PTRACE. So a root worker runs its programs as another user: WAYBILL_PROGRAM_USER, else `nobody`,
 * the one account every Linux has for exactly this (it owns no files). A worker that is not root cannot switch
 * users, and its programs run as itself: no dumpability trick is open to it from Node (docs/operations.md, Security).
 */
import { chmodSync, readFileSync, type Stats, statSync } from 'node:fs';
import { ConfigError } from '../errors';

export interface ProgramUser {
  uid: number;
  gid: number;
  /** For messages: the name given, or uid:gid. */
  name: string;
}

/** `nobody`'s ids when /etc/passwd has no entry for it (a minimal image): the kernel's overflow ids. */
const NOBODY: ProgramUser = { uid: 65534, gid: 65534, name: 'nobody' };

/**
 * The user to spawn programs as, or null for the worker's own. `setting` is WAYBILL_PROGRAM_USER;
 * `workerUid` the worker's uid (process.getuid()), undefined where there are no uids (Windows).
 */
export function programUser(setting: string | undefined, workerUid: number | undefined): ProgramUser | null {
  if (workerUid === undefined) {
    if (setting !== undefined)
      throw new ConfigError('WAYBILL_PROGRAM_USER: this platform has no user ids to switch to');
    return null;
  }
  const user = setting === undefined ? (workerUid === 0 ? (lookup('nobody') ?? NOBODY) : null) : parse(setting);
  if (user === null || user.uid === workerUid) return user;
  if (workerUid !== 0) {
    throw new ConfigError(
      `WAYBILL_PROGRAM_USER: ${user.name}: this worker runs as uid ${workerUid} and cannot start programs as another ` +
        'user; run the worker as root, or unset WAYBILL_PROGRAM_USER',
    );
  }
  return user;
}

let resolved: { setting: string | undefined; user: ProgramUser | null } | undefined;

/** programUser for this process, resolved once (it reads /etc/passwd); `waybill worker` resolves it at start. */
export function configuredProgramUser(setting: string | undefined): ProgramUser | null {
  if (resolved === undefined || resolved.setting !== setting)
    resolved = { setting, user: programUser(setting, process.getuid?.()) };
  return resolved.user;
}

function parse(setting: string): ProgramUser {
  const ids = /^(\d+):(\d+)$/.exec(setting);
  if (ids) return { uid: Number(ids[1]), gid: Number(ids[2]), name: setting };
  const user = lookup(setting);
  if (!user) throw new ConfigError(`WAYBILL_PROGRAM_USER: no user ${JSON.stringify(setting)} in /etc/passwd`);
  return user;
}

function lookup(name: string): ProgramUser | null {
  let passwd: string;
  try {
    passwd = readFileSync('/etc/passwd', 'utf8');
  } catch {
    return null;
  }
  for (const line of passwd.split('\n')) {
    const [user, , uid, gid] = line.split(':');
    if (user === name && /^\d+$/.test(uid ?? '') && /^\d+$/.test(gid ?? '')) {
      return { uid: Number(uid), gid: Number(gid), name };
    }
  }
  return null;
}

/**
 * Takes other users' access away from the SQLite store's files (the database, its WAL and shared memory),
 * and the group's where the program's group owns them: a program that guesses the path must not open it.
 * SQLite gives a WAL it creates later the database's own mode. Returns the files changed.
 */
export function keepStoreFrom(user: ProgramUser, file: string): string[] {
  const changed: string[] = [];
  for (const path of [file, `${file}-wal`, `${file}-shm`, `${file}-journal`]) {
    let stat: Stats;
    try {
      // The comment keeps Turbopack from tracing the whole project for this one computed path.
      stat = statSync(/* turbopackIgnore: true */ path);
    } catch {
      continue;
    }
    const shut = stat.gid === user.gid ? 0o077 : 0o007;
    if ((stat.mode & shut) === 0) continue;
    chmodSync(path, stat.mode & 0o7777 & ~shut);
    changed.push(path);
  }
  return changed;
}
