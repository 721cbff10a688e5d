/**
 * The production dashboard for the bench: built once if there is no build, started the way users start it
 * (`node bin/start.mjs --no-worker --no-demo`: next start in a cluster of WAYBILL_WEB_PROCESSES, one per core
 * by default), and always stopped. start.mjs stops its own dashboard child on SIGTERM, so the bench only ever
 * signals start.mjs, and waits for it.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const NEXT_BIN = createRequire(import.meta.url).resolve('next/dist/bin/next');

export interface Server {
  url: string;
  stop(): Promise<void>;
}

/** `next build` when there is no build (or when asked): the bench measures what `npm start` serves. */
export async function ensureBuild(force: boolean, log: (line: string) => void): Promise<void> {
  if (!force && existsSync(`${ROOT}.next/BUILD_ID`)) return;
  log('bench: next build (once; a minute or two)…');
  const build = spawn(process.execPath, [NEXT_BIN, 'build'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  const code = await new Promise<number | null>((resolve) => build.once('close', resolve));
  if (code !== 0) throw new Error(`next build failed (exit ${code})`);
}

export async function startServer(databaseUrl: string, port: number, log: (line: string) => void): Promise<Server> {
  const child: ChildProcess = spawn(process.execPath, ['bin/start.mjs', '--no-worker', '--no-demo'], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: databaseUrl, PORT: String(port), HOST: '127.0.0.1' },
    // Its own process group: a Ctrl-C at the terminal reaches the bench, which stops the server in order.
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-4000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  let gone = false;
  void exited.then(() => {
    gone = true;
  });
  const server: Server = {
    url: `http://127.0.0.1:${port}`,
    async stop() {
      if (gone) return;
      child.kill('SIGTERM');
      const stopped = await Promise.race([exited.then(() => true), sleep(15_000).then(() => false)]);
      if (!stopped) {
        log('bench: the server did not stop within 15 s; killing it');
        child.kill('SIGKILL');
        await exited;
      }
    },
  };
  if (await answers(server.url, () => gone, 60_000)) return server;
  if (gone) throw new Error(`the server exited before answering:\n${output}`);
  await server.stop();
  throw new Error(`the server did not answer within 60 s:\n${output}`);
}

/** Whether a dashboard at `url` answers its claims page (a page with no run of its own) within `withinMs`. */
export async function answers(url: string, gone: () => boolean, withinMs: number): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  while (Date.now() < deadline && !gone()) {
    try {
      const response = await fetch(`${url}/claims`);
      await response.arrayBuffer();
      if (response.ok) return true;
    } catch {
      // Not listening yet.
    }
    await sleep(250);
  }
  return false;
}
