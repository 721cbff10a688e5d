/**
 * One home per rule: the claim-expiry, run-id, liveness, operator-JSON and JSON Content-Type rules are written
 * once, in lib/domain (and the claim-expiry SQL once, in lib/store/shared/claim-expiry-sql.ts), and imported
 * everywhere else. A copy written again anywhere in lib/ or app/ fails here, naming the file and line; the
 * PostgreSQL functions' current text (lib/store/postgres/functions/) is in lib/ and held to it. drizzle/ is left
 * out: its migrations keep the functions' older texts as history (so is lib/store/migrate/migrations.generated.ts,
 * their embedded copy). lib/domain itself imports nothing but zod, node built-ins and its own files (a rule two
 * rules share, such as what text a store keeps). lib/store's root holds index.ts and folders only, so each of its
 * files has a home whose name says what it holds.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const EMBEDDED_MIGRATIONS = 'lib/store/migrate/migrations.generated.ts';

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const path = `${dir}/${e.name}`;
    if (e.isDirectory()) return sources(path);
    return /\.tsx?$/.test(e.name) && path !== EMBEDDED_MIGRATIONS ? [path] : [];
  });
}

/** Every line of lib/ and app/ matching `pattern`, outside comments, as "file:line". */
function copies(pattern: RegExp, homes: string[]): string[] {
  return [...sources('lib'), ...sources('app')]
    .filter((file) => !homes.includes(file))
    .flatMap((file) =>
      readFileSync(join(ROOT, file), 'utf8')
        .split('\n')
        .flatMap((line, i) => (!/^\s*(\*|\/\/|\/\*)/.test(line) && pattern.test(line) ? [`${file}:${i + 1}`] : [])),
    );
}

describe('one home per rule', () => {
  it('writes the claim-expiry rule (claimed at + TTL) only in its two homes', () => {
    expect(
      copies(/claimed_at\s*\+|claimedAt\}?\s*\+/, [
        'lib/domain/claim-expiry.ts',
        'lib/store/shared/claim-expiry-sql.ts',
      ]),
    ).toEqual([]);
  });

  it('writes the run-id rules (their patterns, their limits, their schemas) only in lib/domain/run-id.ts', () => {
    const runIdRule =
      /\[A-Za-z0-9\]\[A-Za-z0-9\._:|\\s\\p\{Cc\}|RUN_ID\w*\s*=\s*\d|(runRef|runId\w*|lookupId|newRunId)\s*=\s*z\b/;
    expect(copies(runIdRule, ['lib/domain/run-id.ts'])).toEqual([]);
  });

  it('writes the liveness rule (three heartbeats, a floor) only in lib/domain/liveness.ts', () => {
    expect(
      copies(/\b3\s*\*\s*\w*heartbeat|heartbeat\w*\s*\*\s*3\b|LIVE_WITHIN_FLOOR_MS\s*=/i, ['lib/domain/liveness.ts']),
    ).toEqual([]);
  });

  it('parses operator JSON (size, nesting, parse) only in lib/domain/json-input.ts', () => {
    // The edges that take JSON from a person or a program: request bodies, forms, CLI flags. Stored JSON is
    // read elsewhere (lib/control/views.ts, lib/cli/runs.ts), and lib/cli/version.ts reads a package.json.
    const edges = (file: string) =>
      /^(lib\/api|app\/actions|app\/api|lib\/cli)\//.test(file) &&
      !['lib/cli/version.ts', 'lib/cli/runs.ts'].includes(file);
    expect(
      copies(/JSON\.parse\(|nestingDepth\(|MAX_DEPTH\s*=/, ['lib/domain/json-input.ts']).filter((at) =>
        edges(at.split(':')[0]!),
      ),
    ).toEqual([]);
  });

  it('writes the JSON Content-Type rule (a JSON media type, a UTF-8 charset) only in lib/domain/json-media-type.ts', () => {
    // The control API's bodies and the model gateway's requests both read it from there.
    expect(copies(/application\\\/\(\?:|new TextDecoder\(label/, ['lib/domain/json-media-type.ts'])).toEqual([]);
  });

  it('keeps lib/domain free of dependencies but zod, node built-ins and its own files', () => {
    const imports = sources('lib/domain').flatMap((file) =>
      [...readFileSync(join(ROOT, file), 'utf8').matchAll(/^\s*(?:import|export)[^'"]*from\s+['"]([^'"]+)['"]/gm)].map(
        (m) => `${relative('lib/domain', file)}: ${m[1]}`,
      ),
    );
    expect(imports.filter((i) => !/: (zod|node:[\w/]+|\.\/[\w-]+)$/.test(i))).toEqual([]);
    expect(imports.length).toBeGreaterThan(0);
  });

  it("keeps lib/store's root to index.ts and folders (contract, schema, shared, migrate, a folder per backend)", () => {
    const loose = readdirSync(join(ROOT, 'lib/store'), { withFileTypes: true })
      .filter((e) => !e.isDirectory() && e.name !== 'index.ts')
      .map((e) => `lib/store/${e.name}`);
    expect(loose).toEqual([]);
  });
});
