/**
 * `npm run db:check`: fails when drizzle-kit generate would write a migration the repository does not have,
 * i.e. when lib/store/schema/{sqlite,pg}.ts and drizzle/{sqlite,pg}/ disagree. Each dialect is generated into
 * a temporary copy of its migrations folder, never into the repository; any file that appears or changes
 * there is named, with the start of the SQL drizzle-kit would have added.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');
const DIALECTS = [
  { name: 'sqlite', kit: 'sqlite', schema: 'lib/store/schema/sqlite.ts', out: 'drizzle/sqlite' },
  { name: 'pg', kit: 'postgresql', schema: 'lib/store/schema/pg.ts', out: 'drizzle/pg' },
] as const;

/** Every file under dir, relative to it, with its text. */
function files(dir: string): Map<string, string> {
  const found = new Map<string, string>();
  const walk = (at: string) => {
    for (const entry of readdirSync(at, { withFileTypes: true })) {
      const path = join(at, entry.name);
      if (entry.isDirectory()) walk(path);
      else found.set(relative(dir, path), readFileSync(path, 'utf8'));
    }
  };
  walk(dir);
  return found;
}

function check(dialect: (typeof DIALECTS)[number], scratch: string): string[] {
  const out = join(scratch, dialect.name);
  cpSync(join(root, dialect.out), out, { recursive: true });
  const config = join(scratch, `drizzle.${dialect.name}.config.json`);
  // drizzle-kit joins `out` to its working directory even when absolute, so it runs in the scratch directory.
  writeFileSync(
    config,
    JSON.stringify({ dialect: dialect.kit, schema: join(root, dialect.schema), out: `./${dialect.name}` }),
  );
  // No standard input: a question drizzle-kit would ask (a rename?) is a difference, not something to answer here.
  const run = spawnSync(join(root, 'node_modules', '.bin', 'drizzle-kit'), ['generate', '--config', config], {
    cwd: scratch,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 120_000,
  });
  // It exits 0 after some failures (an unreadable snapshot), so its own error lines count too.
  if (run.status !== 0 || /\bError\b/.test(run.stderr) || /\bError\b/.test(run.stdout)) {
    return [
      `${dialect.out}: drizzle-kit generate failed (exit ${run.status ?? run.signal}):\n${run.stdout}${run.stderr}`,
    ];
  }
  const before = files(join(root, dialect.out));
  const after = files(out);
  const problems: string[] = [];
  for (const [path, text] of after) {
    const had = before.get(path);
    if (had === undefined) {
      const preview = path.endsWith('.sql') ? `\n    ${text.split('\n').slice(0, 8).join('\n    ')}` : '';
      problems.push(
        `${dialect.out}/${path} is missing: the schema in ${dialect.schema} has changes no migration holds${preview}`,
      );
    } else if (had !== text) {
      problems.push(`${dialect.out}/${path} would change: it does not match what ${dialect.schema} generates`);
    }
  }
  return problems;
}

const scratch = mkdtempSync(join(tmpdir(), 'waybill-db-check-'));
try {
  const problems = DIALECTS.flatMap((d) => check(d, scratch));
  if (problems.length > 0) {
    process.stderr.write(
      `db:check: the schemas and the committed migrations disagree.\n${problems.map((p) => `  - ${p}`).join('\n')}\n` +
        'Run `npm run db:generate` and commit the migration it writes (with a name that says why).\n',
    );
    process.exit(1);
  }
  process.stdout.write(`db:check: ${DIALECTS.map((d) => d.out).join(' and ')} match their schemas\n`);
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
