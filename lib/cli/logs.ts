/**
 * `waybill logs <runId>`: what a command workflow's program printed, and its worker's notes, read from the
 * store — the worker may run on another machine. The newest --limit lines (100), or the first --limit after
 * --after SEQ; --follow then prints new lines as they come until the run ends (exit 0) or Ctrl-C (130).
 * --json: the API's page (GET /api/v1/runs/{id}/logs) as one document; with --follow, one JSON object per line
 * (NDJSON: `{"runId", "seq", "at", "stream", "line", …}`), as they come.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { readRunLog } from '../control/logs';
import type { runLogLineView } from '../control/views';
import type { Store } from '../store/contract';
import { MAX_LOG_KEEP } from '../store/shared/log-lines';
import { FINISHED_STATUSES } from '../store/shared/sql';
import { check, count, flags, GLOBAL_OPTIONS, lookupId, positionals } from './args';
import { type Cli, withStore } from './context';

const POLL_MS = 500;
/** Lines a follower reads per query: it pages on while there are more. */
const FOLLOW_PAGE = 1000;
/**
 * A cancelled run's status changes before its worker has stopped the program, whose last lines and the
 * worker's notes come after: a follower waits for them until nothing new came for QUIET_MS, at most LINGER_MS.
 */
const QUIET_MS = 2000;
const LINGER_MS = 15_000;

const seqFlag = z
  .string()
  .regex(/^\d{1,15}$/, 'must be a whole number, 0 or more (a line seq)')
  .transform(Number);

type Line = ReturnType<typeof runLogLineView>;

export async function logs(cli: Cli, args: string[]): Promise<number> {
  const { values, positionals: given } = flags(() =>
    parseArgs({
      args,
      strict: true,
      allowPositionals: true,
      options: {
        ...GLOBAL_OPTIONS,
        follow: { type: 'boolean', short: 'f' },
        after: { type: 'string' },
        limit: { type: 'string' },
      },
    }),
  );
  const [id] = positionals(given, ['runId']);
  const runId = check(lookupId, id, 'run id');
  const after = values.after === undefined ? undefined : check(seqFlag, values.after, '--after');
  const limit = values.limit === undefined ? 100 : check(count(MAX_LOG_KEEP), values.limit, '--limit');

  return withStore(cli, values.db, async (store) => {
    const page = await readRunLog(store, runId, { after, limit });
    if (!values.follow) {
      if (values.json) cli.json(page);
      else if (page.lines.length === 0)
        cli.err(`waybill logs: run ${runId} has no log lines${after === undefined ? '' : ` after ${after}`}`);
      else for (const line of page.lines) cli.out(text(line));
      return 0;
    }
    const print = (line: Line) => (values.json ? cli.json({ runId, ...line }) : cli.out(text(line)));
    page.lines.forEach(print);
    return follow(cli, store, runId, page.next, print, Boolean(values.json));
  });
}

/** `2026-01-02T10:00:01.250Z  stderr  the line` */
function text(line: Line): string {
  return `${new Date(line.at * 1000).toISOString()}  ${line.stream.padEnd(6)}  ${line.line}`;
}

async function follow(
  cli: Cli,
  store: Store,
  runId: string,
  from: number,
  print: (line: Line) => void,
  json: boolean,
): Promise<number> {
  const interrupted = new AbortController();
  const onSigint = () => interrupted.abort();
  process.once('SIGINT', onSigint);
  let next = from;
  let ended: { status: string; at: number; lastLineAt: number } | null = null;
  try {
    for (;;) {
      // The status before the lines: a run seen finished had its lines stored before it finished (see header).
      const status = (await store.getRun(runId))?.status;
      let more = true;
      let got = 0;
      while (more) {
        const page = await readRunLog(store, runId, { after: next, limit: FOLLOW_PAGE });
        page.lines.forEach(print);
        got += page.lines.length;
        next = page.next;
        more = page.more;
      }
      const now = Date.now();
      if (status && (FINISHED_STATUSES as readonly string[]).includes(status)) {
        ended ??= { status, at: now, lastLineAt: now };
        if (got > 0) ended.lastLineAt = now;
        const lingering =
          ended.status === 'cancelled' && now - ended.lastLineAt < QUIET_MS && now - ended.at < LINGER_MS;
        if (!lingering) {
          if (!json) cli.err(`waybill logs: run ${runId} ${ended.status}`);
          return 0;
        }
      } else ended = null;
      await sleep(POLL_MS, undefined, { signal: interrupted.signal }).catch(() => {});
      if (interrupted.signal.aborted) {
        if (!json) cli.err(`waybill logs: stopped following run ${runId}`);
        return 130;
      }
    }
  } finally {
    process.off('SIGINT', onSigint);
  }
}
