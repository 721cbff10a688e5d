/**
 * The order test files start in. A fresh clone has no vitest cache of durations, so vitest starts the largest
 * files first, and the longest files (a package packed, built and installed; a venv made; workers killed and
 * restarted) could start last and leave one worker running alone at the end. Those folders and files go first;
 * within a group the cache's order stands (longer, or larger, first).
 */
import { BaseSequencer, type TestSpecification } from 'vitest/node';

const LONG_FIRST = [
  '/test/package/',
  '/test/python/',
  '/test/examples/',
  '/test/crash/',
  '/test/launch/',
  // Real worker processes killed and restarted, waiting on real leases: a minute or more each.
  'processes.test.ts',
  '/test/gateway/sigkill.test.ts',
];

function group(spec: TestSpecification): number {
  const at = LONG_FIRST.findIndex((part) => spec.moduleId.includes(part));
  return at < 0 ? LONG_FIRST.length : at;
}

export class LongFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    return sorted
      .map((spec, index) => ({ spec, index }))
      .sort((a, b) => group(a.spec) - group(b.spec) || a.index - b.index)
      .map(({ spec }) => spec);
  }
}
