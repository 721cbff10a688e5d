/**
 * A fresh virtual environment with clients/python installed from the checkout and no package index, as a
 * user's sandbox would have it: `python3 -m venv`, then `pip install --no-index ./clients/python`. Without
 * python3 (or its venv module) the suite is skipped loudly; under CI=true that is a failure.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

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

/** Creates the venv in `dir` and installs the client into it; returns its python. */
export function makeVenv(dir: string): string {
  const venv = join(dir, 'venv');
  execFileSync('python3', ['-m', 'venv', venv], { stdio: 'pipe' });
  const python = join(venv, 'bin', 'python');
  // PIP_NO_INDEX too, so nothing in the environment can point pip at an index.
  execFileSync(python, ['-m', 'pip', 'install', '--no-index', '--disable-pip-version-check', '--quiet', CLIENT_DIR], {
    stdio: 'pipe',
    env: { ...process.env, PIP_NO_INDEX: '1', PIP_CONFIG_FILE: '/dev/null' },
  });
  return python;
}
