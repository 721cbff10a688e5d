/**
 * Issue 11, item 15: the CLI at its edges, as real processes. A result nested 50,000 deep is refused (not a
 * stack overflow); `inspect | head` ends quietly; errors under --json are one JSON object on stderr;
 * --version prints package.json's version; NO_COLOR takes the colour out of a worker's terminal lines.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageVersion } from '../../lib/cli/version';
import { tempDir } from '../support/tmp';
import { BIN, freshDb, insertOutsideRun, ROOT, runCli } from './support';

const deep = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

/** A shell pipeline's stdout, stderr and the first command's exit status (bash's PIPESTATUS). */
function pipeline(command: string): Promise<{ stdout: string; stderr: string; status: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', `${command}; echo "status=\${PIPESTATUS[0]}" >&2`], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    child.on('error', reject);
    child.on('close', () => {
      const status = Number(/status=(\d+)\n$/.exec(stderr)?.[1] ?? -1);
      resolve({ stdout, stderr: stderr.replace(/status=\d+\n$/, ''), status });
    });
  });
}

describe('waybill at its edges', () => {
  it('refuses a signal past WAYBILL_MAX_WAITS_PER_RUN with one line naming it, and writes nothing', async () => {
    const db = await freshDb();
    const input = JSON.stringify({ count: 1, outbox: 'outbox.jsonl' });
    expect((await db.cli(['start', 'notify', '--input', input, '--id', 'r1'])).code).toBe(0);
    const env = { WAYBILL_MAX_WAITS_PER_RUN: '1' };
    expect((await db.cli(['signal', 'r1', 'a', '--payload', '1'], { env })).code).toBe(0);
    const before = db.dump();
    const refused = await db.cli(['signal', 'r1', 'b'], { env });
    expect([refused.code, refused.stdout, refused.stderr]).toEqual([
      1,
      '',
      'waybill signal: run r1 holds 1 waits, the most a run may hold (WAYBILL_MAX_WAITS_PER_RUN); signal b was not sent; nothing was written\n',
    ]);
    expect(db.dump()).toEqual(before);
  });

  it('refuses a --result nested 50,000 deep with one line naming the limit, and writes nothing', async () => {
    const db = await freshDb();
    insertOutsideRun(db, 'ext-1', { claimAgeS: 3600 });
    const file = join(db.dir, 'deep.json');
    writeFileSync(file, deep(50_000));
    const before = db.dump();
    const [fromFile, inline, atLimit] = await Promise.all([
      db.cli(['resolve', 'ext-1:step:2', '--result', `@${file}`]),
      db.cli(['resolve', 'ext-1:step:2', '--result', deep(65)]),
      db.cli(['start', 'agent-batch', '--input', `{"items":${deep(80)}}`]),
    ]);
    expect(fromFile).toEqual({
      code: 2,
      stdout: '',
      stderr: 'waybill resolve: --result nests 50,000 levels deep: the limit is 64\n',
    });
    expect(inline).toEqual({
      code: 2,
      stdout: '',
      stderr: 'waybill resolve: --result nests 65 levels deep: the limit is 64\n',
    });
    expect(atLimit).toMatchObject({ code: 2, stdout: '' });
    expect(atLimit.stderr).toBe('waybill start: --input nests 81 levels deep: the limit is 64\n');
    expect(db.dump()).toEqual(before);
    // 64 levels is within the limit: committed, and read back whole.
    const ok = await db.cli(['resolve', 'ext-1:step:2', '--result', deep(64)]);
    expect(ok).toMatchObject({ code: 0, stderr: '' });
    expect(
      db.raw((c) => c.prepare("SELECT result_json AS r FROM committed WHERE idem_key = 'ext-1:step:2'").get()),
    ).toEqual({ r: deep(64) });
  });

  it('inspects a run whose saved state an outside client nested 50,000 deep, with a note instead of a stack overflow', async () => {
    const db = await freshDb();
    db.raw((c) =>
      c
        .prepare("INSERT INTO progress(run_id, step, state_json, updated_at) VALUES ('deep-1', 3, ?, 1767225600)")
        .run(deep(50_000)),
    );
    const [json, text] = await Promise.all([db.cli(['inspect', 'deep-1', '--json']), db.cli(['inspect', 'deep-1'])]);
    expect(json).toMatchObject({ code: 0, stderr: '' });
    // The API's progress view: the value left out (null), and why beside it.
    expect(JSON.parse(json.stdout).progress).toMatchObject({
      step: 3,
      state: null,
      stateTruncated:
        'nested 50,000 levels deep, more than the 64 the API accepts and answers with: left out here (the stored text is unchanged)',
    });
    expect(text).toMatchObject({ code: 0, stderr: '' });
    expect(text.stdout).toMatch(/progress +step 3/);
  });

  it('ends quietly when the reader of its output stops early (inspect | head)', async () => {
    const db = await freshDb();
    // 5,000 claims: inspect's table is some 400 KB, far past what a pipe holds before head has gone.
    db.raw((conn) => {
      const insert = conn.prepare('INSERT INTO claims(idem_key, run_id, claimed_at) VALUES (?, ?, ?)');
      conn.transaction(() => {
        for (let i = 0; i < 5000; i++) insert.run(`big:item:${String(i).padStart(5, '0')}`, 'big', Date.now() / 1000);
      })();
    });
    const { stdout, stderr, status } = await pipeline(`node ${BIN} --db ${db.url} inspect big | head -n 1`);
    expect(stdout).toBe('run        big  (external)\n');
    expect(stderr).toBe('');
    expect(status).toBe(0);
  });

  it('under --json, reports an error as one JSON object on stderr, with its code and exit code', async () => {
    const db = await freshDb();
    const [usage, missing, config, conflict] = await Promise.all([
      db.cli(['runs', '--status', 'sleeping', '--json']),
      db.cli(['--json', 'inspect', 'nope']),
      db.cli(['--json', 'runs'], { env: { WAYBILL_CLAIM_TTL_MS: 'soon' } }),
      (async () => {
        db.raw((conn) =>
          conn
            .prepare(
              'INSERT INTO claims(idem_key, run_id, claimed_at, token, worker_id, lease_expires_at) VALUES (?, ?, ?, ?, ?, ?)',
            )
            .run('live:step:0', 'live', Date.now() / 1000, 'tok', 'w1', Date.now() / 1000 + 3600),
        );
        return db.cli(['resolve', 'live:step:0', '--result', '1', '--json']);
      })(),
    ]);
    const parsed = (r: { stderr: string }) => {
      const lines = r.stderr.trimEnd().split('\n');
      expect(lines).toHaveLength(1);
      return JSON.parse(lines[0]!) as { error: { code: string; message: string; command: string; exitCode: number } };
    };
    expect(usage).toMatchObject({ code: 2, stdout: '' });
    expect(parsed(usage)).toEqual({
      error: {
        code: 'INVALID_INPUT',
        message: expect.stringMatching(/^--status: Invalid option/),
        command: 'waybill runs',
        exitCode: 2,
      },
    });
    expect(missing).toMatchObject({ code: 1, stdout: '' });
    expect(parsed(missing)).toEqual({
      error: { code: 'NOT_FOUND', message: expect.stringContaining('nope'), command: 'waybill inspect', exitCode: 1 },
    });
    expect(config).toMatchObject({ code: 2, stdout: '' });
    expect(parsed(config).error).toMatchObject({
      code: 'INVALID_CONFIG',
      message: expect.stringContaining('WAYBILL_CLAIM_TTL_MS'),
      exitCode: 2,
    });
    expect(conflict).toMatchObject({ code: 1, stdout: '' });
    expect(parsed(conflict).error).toMatchObject({
      code: 'CONFLICT',
      message: expect.stringContaining('its lease is live'),
      exitCode: 1,
    });
    // Without --json the same error is the one plain line it always was.
    expect(await db.cli(['inspect', 'nope'])).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/^waybill inspect: .*nope.*\n$/),
    });
  });

  it("prints package.json's version for --version and -V, from the sources or a copy at another depth", async () => {
    const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
    const [long, short, later] = await Promise.all([
      runCli(['--version']),
      runCli(['-V']),
      runCli(['--db', 'file:/nonexistent/x.db', '--version']),
    ]);
    for (const r of [long, short, later]) expect(r).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
    expect((await runCli(['--help'])).stdout).toContain('--version');
    // A built package puts the module deeper (dist/lib/cli/): the walk up still finds the package's own file.
    const dir = tempDir('waybill-version-');
    try {
      mkdirSync(dir.file('dist/lib/cli'), { recursive: true });
      writeFileSync(dir.file('package.json'), JSON.stringify({ name: 'waybill', version: '9.8.7' }));
      writeFileSync(dir.file('dist/package.json'), JSON.stringify({ type: 'module' }));
      expect(packageVersion(dir.file('dist/lib/cli'))).toBe('9.8.7');
    } finally {
      dir.remove();
    }
  });

  it("honours NO_COLOR on a terminal: the worker's lines keep their text and lose their colour", async () => {
    const db = await freshDb();
    const onTerminal = async (env: Record<string, string>) => {
      // script(1) gives the worker a terminal, as a person running it has; the first log line is enough.
      const child = spawn('script', ['-qfec', `node ${BIN} --db ${db.url} worker`, '/dev/null'], {
        cwd: ROOT,
        env: { ...process.env, ...env },
        stdio: ['pipe', 'pipe', 'pipe'],
        detached: true,
      });
      let out = '';
      await new Promise<void>((resolve) => {
        child.stdout.setEncoding('utf8').on('data', (c: string) => {
          out += c;
          if (out.includes('worker started')) resolve();
        });
        child.on('close', () => resolve());
      });
      process.kill(-child.pid!, 'SIGKILL');
      return out.split('\n').find((l) => l.includes('worker started'))!;
    };
    const plain = await onTerminal({ NO_COLOR: '1' });
    const coloured = await onTerminal({ NO_COLOR: '' });
    expect(plain).toMatch(/^\d\d:\d\d:\d\d\.\d{3} INFO {2}worker started {2}workerId=\S+ concurrency=1\r?$/);
    expect(plain).not.toContain('\x1b[');
    // An empty NO_COLOR is unset (no-color.org): colour stays.
    expect(coloured).toContain('\x1b[32mINFO');
  });
});
