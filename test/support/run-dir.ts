/**
 * Vitest's global setup: one directory for the whole run, named by WAYBILL_TEST_RUN_DIR in every file's
 * environment, for what the files may share because one copy a run is all they need (the venv of
 * test/python/venv.ts). Removed when the run ends.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export default function setup(): () => void {
  const dir = mkdtempSync(join(tmpdir(), 'waybill-run-'));
  process.env.WAYBILL_TEST_RUN_DIR = dir;
  return () => {
    if (!process.env.WAYBILL_KEEP_TMP) rmSync(dir, { recursive: true, force: true });
  };
}
