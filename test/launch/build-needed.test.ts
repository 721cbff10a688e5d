/**
 * When a checkout's dashboard is built again (lib/launch/dashboard.ts buildNeeded), for `npm start` and the
 * browser suite alike: with no build, and with a source changed, added or removed since it. A checkout updated by
 * `git pull` used to keep serving its old build, which refused the store the new code had migrated.
 */
import { mkdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildNeeded } from '../../lib/launch/dashboard';
import { makeTempDir } from '../support/tmp';

describe('a checkout’s dashboard build', () => {
  it('is needed when missing, or when a source changed, came or went since it', () => {
    const root = makeTempDir('waybill-build-').path;
    const at = (path: string, seconds: number) => utimesSync(join(root, path), seconds, seconds);
    for (const dir of ['app', 'lib/store', '.next']) mkdirSync(join(root, dir), { recursive: true });
    writeFileSync(join(root, 'app/page.tsx'), '');
    writeFileSync(join(root, 'lib/store/index.ts'), '');
    for (const path of ['app/page.tsx', 'lib/store/index.ts', 'lib/store', 'lib', 'app']) at(path, 1_000);
    expect(buildNeeded(root)).toBe('there is no production build');

    writeFileSync(join(root, '.next/BUILD_ID'), 'x');
    at('.next/BUILD_ID', 2_000);
    expect(buildNeeded(root)).toBeNull();

    at('lib/store/index.ts', 3_000);
    expect(buildNeeded(root)).toBe('lib/store/index.ts changed since the last build');
    at('lib/store/index.ts', 1_000);

    // A file removed shows only in its directory's time.
    rmSync(join(root, 'app/page.tsx'));
    at('app', 3_000);
    expect(buildNeeded(root)).toBe('app changed since the last build');
  });
});
