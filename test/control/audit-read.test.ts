/**
 * Reading the operators' log three ways — `waybill audit` (a real process), GET /api/v1/audit and the /audit
 * page — over one SQLite file written by the CLI (as two operators, --as) and by the API: the same filters
 * give the same entries in the same view, pages continue without gaps or repeats, and the page lists the
 * CLI's actions beside the API's.
 */
import { renderToStaticMarkup } from 'react-dom/server';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { AuditStore, RunStore, Store } from '../../lib/store/contract';
import { json, type Result, runCli } from '../cli/support';
import { makeTempDir } from '../support/tmp';

vi.mock('@/lib/auth/server', async (actual) => ({
  ...(await actual<object>()),
  requirePage: async () => ({ actor: 'vera (viewer)', role: 'viewer' }),
}));

// One file for the whole file's tests (freshDb's is removed after each test): the log is read, not changed.
const dir = makeTempDir('waybill-audit-read-');
const url = `file:${dir.file('w.db')}`;
const db = { cli: (args: string[]): Promise<Result> => runCli(['--db', url, ...args]) };
let GET: (request: Request) => Promise<Response>;
let store: Store & RunStore & AuditStore;

beforeAll(async () => {
  process.env.DATABASE_URL = url;
  ({ GET } = await import('../../app/api/v1/audit/route'));
  const { getStore } = await import('../../lib/data/store');
  store = await getStore();
  for (let i = 0; i < 5; i++)
    await store.createRun({ id: `r${i}`, workflow: 'agent-batch', inputJson: '{"count":1}', totalSteps: 1 });
  // ann pauses r0..r2 and cancels r0; bob pauses r3, r4; the API (local, no tokens) cancels r1.
  for (const [as, args] of [
    ['ann', ['pause', 'r0']],
    ['ann', ['pause', 'r1']],
    ['ann', ['pause', 'r2']],
    ['bob', ['pause', 'r3']],
    ['bob', ['pause', 'r4']],
    ['ann', ['cancel', 'r0', '--reason', 'wrong input']],
  ] as [string, string[]][]) {
    expect((await db.cli(['--as', as, ...args])).code).toBe(0);
  }
  const { POST } = await import('../../app/api/v1/runs/[id]/[action]/route');
  const cancelled = await POST(
    new Request('http://127.0.0.1:3000/api/v1/runs/r1/cancel', {
      method: 'POST',
      headers: { host: '127.0.0.1:3000', 'content-type': 'application/json' },
      body: '{}',
    }),
    { params: Promise.resolve({ id: 'r1', action: 'cancel' }) },
  );
  expect(cancelled.status).toBe(200);
}, 120_000);

afterAll(async () => {
  await store?.close();
  dir.remove();
});

const api = async (query: string) => {
  const response = await GET(
    new Request(`http://127.0.0.1:3000/api/v1/audit${query}`, { headers: { host: '127.0.0.1:3000' } }),
  );
  return { status: response.status, body: await response.json() };
};
type Page = {
  entries: {
    id: number;
    actor: string;
    role: string;
    action: string;
    target: string;
    runId: string | null;
    detail: string | null;
  }[];
  next: number | null;
};
const brief = (page: Page) => page.entries.map((e) => `${e.actor} ${e.action} ${e.target}`);

describe('waybill audit and GET /api/v1/audit', () => {
  it('give the same entries for the same filters, in the same view', async () => {
    const cases: [string[], string, string[]][] = [
      [
        [],
        '',
        [
          'local cancel r1',
          'ann cancel r0',
          'bob pause r4',
          'bob pause r3',
          'ann pause r2',
          'ann pause r1',
          'ann pause r0',
        ],
      ],
      [['--actor', 'ann'], '?actor=ann', ['ann cancel r0', 'ann pause r2', 'ann pause r1', 'ann pause r0']],
      [['--action', 'cancel'], '?action=cancel', ['local cancel r1', 'ann cancel r0']],
      [['--run', 'r1'], '?runId=r1', ['local cancel r1', 'ann pause r1']],
      [['--actor', 'bob', '--action', 'pause'], '?actor=bob&action=pause', ['bob pause r4', 'bob pause r3']],
      [['--actor', 'an'], '?actor=an', []],
    ];
    for (const [flags, query, expected] of cases) {
      const fromCli = json<Page>(await db.cli(['audit', '--json', ...flags]));
      const fromApi = await api(query);
      expect(fromApi.status, query).toBe(200);
      expect(brief(fromCli), flags.join(' ')).toEqual(expected);
      expect(fromApi.body, query).toEqual(fromCli);
    }
    const [cancel] = json<Page>(await db.cli(['audit', '--json', '--actor', 'ann', '--action', 'cancel'])).entries;
    expect(cancel).toMatchObject({ role: 'local', runId: 'r0', detail: 'reason: wrong input' });
    expect(Object.keys(cancel!).sort()).toEqual(['action', 'actor', 'at', 'detail', 'id', 'role', 'runId', 'target']);
  });

  it('page by next / --before: every entry once, newest first, the last page saying null', async () => {
    const viaCli: string[][] = [];
    let before: number | null = null;
    do {
      const page: Page = json<Page>(
        await db.cli(['audit', '--json', '--limit', '3', ...(before === null ? [] : ['--before', String(before)])]),
      );
      viaCli.push(brief(page));
      before = page.next;
    } while (before !== null);
    expect(viaCli.map((p) => p.length)).toEqual([3, 3, 1]);

    const viaApi: string[][] = [];
    let next: number | null = null;
    do {
      const page = (await api(`?limit=3${next === null ? '' : `&before=${next}`}`)).body as Page;
      viaApi.push(brief(page));
      next = page.next;
    } while (next !== null);
    expect(viaApi).toEqual(viaCli);
    expect(new Set(viaApi.flat()).size).toBe(7);
  });

  it('narrow by time, since ≤ at < until, in epoch seconds or ISO 8601', async () => {
    const all = (await api('')).body as Page;
    const oldest = (all.entries.at(-1) as { at: number } | undefined)!.at;
    const iso = new Date(Math.floor(oldest) * 1000).toISOString();
    expect(brief(json<Page>(await db.cli(['audit', '--json', '--since', iso])))).toHaveLength(7);
    expect(brief((await api(`?since=${Math.floor(oldest)}`)).body)).toHaveLength(7);
    expect(brief(json<Page>(await db.cli(['audit', '--json', '--until', String(Math.floor(oldest))])))).toEqual([]);
    expect(brief((await api(`?since=${Math.ceil(oldest) + 3600}`)).body)).toEqual([]);
  });

  it('refuse bad filters naming them, with exit 2 and 400', async () => {
    for (const [args, line] of [
      [
        ['audit', '--since', 'yesterday'],
        'waybill audit: --since: must be epoch seconds or an ISO 8601 date-time (2026-12-01T10:00:00Z)\n',
      ],
      [
        ['audit', '--action', 'delete'],
        'waybill audit: --action: must be one of start, pause, resume, cancel, retry, expire, resolve, sweep, prune, token, rerun, fork, approve, reject, signal, budget, schedule-add, schedule-pause, schedule-resume, schedule-delete, emit, webhook-add, webhook-pause, webhook-resume, webhook-delete, webhook-resend\n',
      ],
      [['audit', '--limit', '0'], expect.stringMatching(/^waybill audit: --limit: /)],
      [['audit', '--since', '20', '--until', '10'], 'waybill audit: --until: must not be before since\n'],
    ] as [string[], string][]) {
      expect(await db.cli(args)).toEqual({ code: 2, stdout: '', stderr: line });
    }
    for (const [query, field] of [
      ['?until=soon', 'until'],
      ['?action=delete', 'action'],
      ['?limit=501', 'limit'],
      ['?before=abc', 'before'],
      ['?actorr=ann', 'actorr'],
    ] as [string, string][]) {
      const { status, body } = await api(query);
      expect([status, body.error.code, Object.keys(body.error.fields)], query).toEqual([400, 'INVALID_INPUT', [field]]);
    }
  });
});

describe('the /audit page', () => {
  it("lists the CLI's actions, as who gave them with --as, beside the API's", async () => {
    const { default: AuditPage } = await import('../../app/audit/page');
    const html = renderToStaticMarkup(await AuditPage({ searchParams: Promise.resolve({}) }));
    const who = [...html.matchAll(/data-testid="audit-who"[^>]*>([^<]*)</g)].map((m) => m[1]);
    expect(who).toEqual(['local', 'ann', 'bob', 'bob', 'ann', 'ann', 'ann']);
    expect(html).toContain('reason: wrong input');
  });
});
