/**
 * A fresh directory under os.tmpdir() for each test, removed when the test finishes. Every test that touches
 * a SQLite file, an effects file or a lock directory gets its own, so tests never see each other's rows.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onTestFinished } from 'vitest';

export interface TempDir {
  path: string;
  /** A path inside the directory. */
  file(name: string): string;
  remove(): void;
}

/** A directory the caller removes itself (for beforeEach/afterEach pairs). */
export function makeTempDir(prefix = 'waybill-test-'): TempDir {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return {
    path,
    file: (name) => join(path, name),
    // Kept when WAYBILL_KEEP_TMP is set, to look at a failed test's files by hand.
    remove: () => {
      if (!process.env.WAYBILL_KEEP_TMP) rmSync(path, { recursive: true, force: true });
    },
  };
}

/** A directory removed when the current test finishes; call it inside a test. */
export function tempDir(prefix?: string): TempDir {
  const dir = makeTempDir(prefix);
  onTestFinished(() => dir.remove());
  return dir;
}
