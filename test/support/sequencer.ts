/**
 * The order test files start in: the longest first, by each file's seconds in test/support/durations.json (kept
 * by scripts/test-durations.ts from a whole run's report). A fresh clone has no vitest cache of durations, so
 * vitest would start the largest files first, and a long file (workers killed and restarted, a package packed
 * and installed) could start last and run alone at the end. Files the list does not know yet start first, as
 * vitest starts files it has no figures for: a new file may be a long one.
 */
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

const DURATIONS = JSON.parse(readFileSync(new URL('./durations.json', import.meta.url), 'utf8')) as Record<
  string,
  number
>;

export class LongFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const seconds = (spec: TestSpecification) =>
      DURATIONS[relative(spec.project.config.root, spec.moduleId)] ?? Number.POSITIVE_INFINITY;
    return sorted
      .map((spec, index) => ({ spec, index, seconds: seconds(spec) }))
      .sort((a, b) => b.seconds - a.seconds || a.index - b.index)
      .map(({ spec }) => spec);
  }
}
