/**
 * One reader per operator view: a run's detail, the runs list, the claims list, the workers, the stalled
 * judgement and the usage ledger are each read by one function, and the run page, the API and the CLI call it.
 * A run's detail used to be read three times with three claim limits (50 on the page, 100 in the API, every
 * claim in `inspect`); a store read of a view written again in an edge (app/, lib/api, lib/cli, lib/data)
 * fails here, naming the file and line.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const EDGES = ['app', 'lib/api', 'lib/cli', 'lib/data'];

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const path = `${dir}/${e.name}`;
    if (e.isDirectory()) return sources(path);
    return /\.tsx?$/.test(e.name) ? [path] : [];
  });
}

/** Every line of `dirs` matching `pattern`, outside comments, as "file:line", but in the files allowed. */
function reads(pattern: RegExp, allowed: string[] = [], dirs = EDGES): string[] {
  return dirs
    .flatMap(sources)
    .filter((file) => !allowed.includes(file))
    .flatMap((file) =>
      readFileSync(join(ROOT, file), 'utf8')
        .split('\n')
        .flatMap((line, i) => (!/^\s*(\*|\/\/|\/\*)/.test(line) && pattern.test(line) ? [`${file}:${i + 1}`] : [])),
    );
}

/** The files that call `reader(`, among the edges. */
const callers = (reader: string) => [...new Set(reads(new RegExp(`\\b${reader}\\(`)).map((at) => at.split(':')[0]))];

describe('one reader per operator view', () => {
  it("reads a run's detail in lib/control/run-rows.ts, for the page, the API and the CLI", () => {
    expect(callers('readRunRows').sort()).toEqual(['lib/api/runs.ts', 'lib/cli/runs.ts', 'lib/data/run-detail.ts']);
    // An outside client's run is made from its rows in one place, and the run's claims are limited once.
    expect(reads(/\boutsideRun\(/, [], [...EDGES, 'lib/control'])).toEqual([
      expect.stringMatching(/^lib\/control\/run-rows\.ts:/),
    ]);
    expect(reads(/CLAIMS_SHOWN\s*=/, [], [...EDGES, 'lib/control'])).toEqual([
      expect.stringMatching(/^lib\/control\/run-rows\.ts:/),
    ]);
  });

  it('reads the runs list in lib/control/runs-list.ts, for the page, the API and the CLI', () => {
    expect(callers('readRunsPage').sort()).toEqual(['lib/api/runs.ts', 'lib/cli/runs.ts', 'lib/data/runs.ts']);
    // `waybill worker`'s live block follows its own runs: not the operator's list.
    expect(reads(/\.listRuns\(/, ['lib/cli/follow.ts'])).toEqual([]);
  });

  it('reads the claims list in lib/control/claims-list.ts, for the page, the API and the CLI', () => {
    expect(callers('readClaimsPage').sort()).toEqual(['lib/api/claims.ts', 'lib/cli/claims.ts', 'lib/data/claims.ts']);
    expect(reads(/\.listClaims\(/)).toEqual([]);
    // The claims page counts them all; a run's claims are counted by its reader.
    expect(reads(/\.countClaims\(/, ['lib/data/claims.ts'])).toEqual([]);
  });

  it('reads the workers in lib/data/workers.ts (the page; the API and the CLI have no workers view)', () => {
    // The claims page reads the holders of its own page's claims, by id.
    expect(reads(/\.listWorkers\(/, ['lib/data/workers.ts', 'lib/data/claims.ts'])).toEqual([]);
  });

  it("reads the stalled judgement's facts in lib/control/stalled.ts only", () => {
    expect(reads(/orOwningRunning|\bcountStalled\(/, ['lib/data/stalled.ts'])).toEqual([]);
    expect(reads(/function (stallOf|readStallFacts|countStalled)\b/, [], [...EDGES, 'lib/control'])).toEqual([
      expect.stringMatching(/^lib\/control\/stalled\.ts:/),
      expect.stringMatching(/^lib\/control\/stalled\.ts:/),
      expect.stringMatching(/^lib\/control\/stalled\.ts:/),
    ]);
  });

  it("reads the usage ledger in lib/control/usage.ts for the pages and the API; the scrape reads the store's sums", () => {
    expect(reads(/\.(listModelCalls|sumModelCalls)\(/, ['lib/data/metrics.ts'])).toEqual([]);
    // `waybill inspect` prints the same ledger (lib/gateway/ledger.ts), the one usage.ofRun answers with.
    expect(callers('runUsage')).toEqual(['lib/cli/runs.ts']);
    expect(callers('ofRun').sort()).toEqual(['app/api/v1/runs/[id]/usage/route.ts', 'lib/data/run-budget.ts']);
  });
});
