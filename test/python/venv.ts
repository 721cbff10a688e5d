/**
 * A fresh virtual environment with clients/python installed from the checkout and no package index, as a
 * user's sandbox would have it: `python3 -m venv`, then `pip install --no-index ./clients/python`. Without
 * python3 (or its venv module) the suite is skipped loudly; under CI=true that is a failure.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { until } from '../support/until';

export const CLIENT_DIR = fileURLToPath(new URL('../../clients/python', import.meta.url));

/** Why Python cannot be used here, or null. */
export function pythonMissing(): string | null {
  const probe = spawnSync(
    'python3',
    ['-c', 'import sys, venv, ensurepip; assert sys.version_info >= (3, 9), sys.version'],
    { encoding: 'utf8' },
  );
  if (probe.error) return `python3 not found (${probe.error.message})`;
  if (probe.status !== 0) return `python3 cannot make a venv: ${probe.stderr.trim().split('\n').pop()}`;
  return null;
}

/**
 * Creates the venv in `dir` and installs the client into it; returns its python. `editable`: `pip install -e`,
 * without build isolation, as a developer of the client installs it.
 */
export function makeVenv(dir: string, { editable = false } = {}): string {
  const venv = join(dir, 'venv');
  execFileSync('python3', ['-m', 'venv', venv], { stdio: 'pipe' });
  const python = join(venv, 'bin', 'python');
  // Python 3.12+ venvs have no setuptools, and with it pip would quietly make an editable install its own
  // legacy way (setup.py develop): without it, only the build backend's own PEP 660 hook can.
  if (editable) execFileSync(python, ['-m', 'pip', 'uninstall', '--yes', '--quiet', 'setuptools'], { stdio: 'pipe' });
  const how = editable ? ['--no-build-isolation', '-e'] : [];
  // PIP_NO_INDEX too, so nothing in the environment can point pip at an index.
  execFileSync(
    python,
    ['-m', 'pip', 'install', '--no-index', '--disable-pip-version-check', '--quiet', ...how, CLIENT_DIR],
    { stdio: 'pipe', env: { ...process.env, PIP_NO_INDEX: '1', PIP_CONFIG_FILE: '/dev/null' } },
  );
  return python;
}

/**
 * The run's venv with the client installed (makeVenv's plain install), made by the first file that asks and
 * shared by the rest: the files that only run the installed client need not make one each, at about 4 CPU-s
 * a venv. It lives in the run's directory (test/support/run-dir.ts), so every run starts from a fresh one.
 */
export async function sharedVenv(): Promise<string> {
  const run = process.env.WAYBILL_TEST_RUN_DIR;
  if (!run)
    throw new Error("WAYBILL_TEST_RUN_DIR is unset: it comes from vitest's global setup (test/support/run-dir.ts)");
  const home = join(run, 'python');
  const ready = join(home, 'ready');
  const failed = join(home, 'failed');
  try {
    mkdirSync(home);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    // Another file is making it: wait for its word, whichever it is.
    await until('the shared venv', () => existsSync(ready) || existsSync(failed), {
      timeoutMs: 400_000,
      intervalMs: 100,
    });
    if (existsSync(failed)) throw new Error(`the shared venv failed in another file: ${readFileSync(failed, 'utf8')}`);
    return readFileSync(ready, 'utf8');
  }
  try {
    const python = makeVenv(home);
    writeFileSync(ready, python);
    return python;
  } catch (error) {
    writeFileSync(failed, String(error));
    throw error;
  }
}

/**
 * How to run mypy here: Debian's python3-mypy is a module of the system's python3, which may not be the
 * python3 first on PATH (a pyenv's). Null when there is none.
 */
export function mypyCommand(): string[] | null {
  for (const command of [['python3', '-m', 'mypy'], ['/usr/bin/python3', '-m', 'mypy'], ['mypy']]) {
    const probe = spawnSync(command[0]!, [...command.slice(1), '--version'], { encoding: 'utf8' });
    if (probe.status === 0 && probe.stdout.startsWith('mypy ')) return command;
  }
  return null;
}
