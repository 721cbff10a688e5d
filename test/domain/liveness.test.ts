/**
 * One liveness rule: a worker silent for N heartbeats is judged the same by every reader — the stall check
 * (API, CLI, metrics), the workers page and the claims page — under WAYBILL_HEARTBEAT_MS. With beats every
 * 20 s a worker is live for 60 s: one silent 30 s (1.5 beats) is alive everywhere, although the pages' old fixed
 * ten seconds called it dead; one silent 90 s (4.5 beats) is dead everywhere. The margins are tens of seconds,
 * far beyond a busy machine's delay between writing the rows and reading them.
 */
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isLive, liveWithinMs } from '../../lib/domain/liveness';
import { openSqliteStore } from '../../lib/store/sqlite';
import { makeTempDir } from '../support/tmp';

const dir = makeTempDir('waybill-liveness-');
const DB = dir.file('w.db');
process.env.DATABASE_URL = `file:${DB}`;
process.env.WAYBILL_HEARTBEAT_MS = '20000';

const { config } = await import('../../lib/config');
const { readStallFacts, stallOf, stallSettings } = await import('../../lib/control/stalled');
const { getWorkers } = await import('../../lib/data/workers');
const { getClaims } = await import('../../lib/data/claims');
const { getStore } = await import('../../lib/data/store');

const SILENT_S = { quiet: 30, gone: 90 };

beforeAll(async () => {
  await (await openSqliteStore({ path: DB })).close();
  const now = Date.now() / 1000;
  const db = new Database(DB);
  for (const [id, silent] of Object.entries(SILENT_S)) {
    db.prepare('INSERT INTO workers (id, host, pid, started_at, heartbeat_at) VALUES (?, ?, ?, ?, ?)').run(
      id,
      'h',
      1,
      now - 300,
      now - silent,
    );
    db.prepare(
      'INSERT INTO claims (idem_key, run_id, claimed_at, token, worker_id, lease_expires_at) VALUES (?, ?, ?, ?, ?, ?)',
    ).run(`${id}:step:0`, id, now - silent, 't', id, now + 600);
  }
  db.close();
});
afterAll(async () => {
  await (await getStore()).close();
  dir.remove();
});

describe('worker liveness', () => {
  it('is judged the same by the stall check, the workers page and the claims page', async () => {
    expect(liveWithinMs(config().WAYBILL_HEARTBEAT_MS)).toBe(60_000);
    const facts = await readStallFacts(await getStore(), stallSettings(config()));
    const { workers } = await getWorkers();
    const { claims } = await getClaims();
    const now = Date.now() / 1000;
    const judged = Object.fromEntries(
      Object.keys(SILENT_S).map((id) => [
        id,
        {
          rule: isLive(facts.workers.get(id), now, 20_000),
          stall:
            stallOf({ workflow: 'notify', status: 'running', owner: id, leaseExpiresAt: now + 600 }, facts) === null,
          workersPage: workers.find((w) => w.id === id)?.state,
          claimsPage: claims.find((c) => c.workerId === id)?.workerAlive,
        },
      ]),
    );
    expect(judged).toEqual({
      quiet: { rule: true, stall: true, workersPage: 'alive', claimsPage: true },
      gone: { rule: false, stall: false, workersPage: 'silent', claimsPage: false },
    });
  });

  it('never calls a worker dead sooner than ten seconds, and never a stopped one live', () => {
    expect(liveWithinMs(1000)).toBe(10_000);
    expect(liveWithinMs(5000)).toBe(15_000);
    expect(isLive({ stoppedAt: null, heartbeatAt: 90 }, 100, 1000)).toBe(true);
    expect(isLive({ stoppedAt: null, heartbeatAt: 89 }, 100, 1000)).toBe(false);
    expect(isLive({ stoppedAt: 99, heartbeatAt: 99 }, 100, 1000)).toBe(false);
    expect(isLive(undefined, 100, 1000)).toBe(false);
  });
});
