/**
 * The README's Python agent (`agent.py` of "The same five minutes in Python"), read from its tagged block so
 * the tests run what a reader copies and the two cannot drift.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../cli/support';

export function readmeAgent(): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const start = readme.indexOf('\n### The same five minutes in Python\n');
  if (start < 0) throw new Error('README.md has no "### The same five minutes in Python" section');
  const section = readme.slice(start, readme.indexOf('\n## ', start));
  const block = /^```python python-five-minutes:agent\.py\n([\s\S]*?)^```$/m.exec(section);
  if (!block) throw new Error('the Python section has no agent.py block');
  return block[1]!;
}
