/** Removes the suite's throwaway database directory (made by prepare.ts) once every test has finished. */
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';

export default function teardown(): void {
  const dir = process.env.WAYBILL_E2E_DIR;
  // Only ever a directory prepare.ts made under the temp dir.
  if (dir?.startsWith(tmpdir()) && dir.includes('waybill-e2e-')) rmSync(dir, { recursive: true, force: true });
}
