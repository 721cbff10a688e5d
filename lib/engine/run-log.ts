/**
 * A run's output log: the lines a command workflow's program printed (lib/engine/command-workflow.ts), kept
 * in the data directory (`run-logs/<run id>.log`) for the run page's last lines. A file, not a table: a chatty
 * program must not write to the store on every line, and the store's tables are another piece's to cut.
 * So the run page shows these lines where the dashboard shares the workers' data directory (one machine);
 * elsewhere the workers' own log has every line too (each is logged with its run id).
 *
 * Bounded: past MAX_BYTES the file keeps only its newer half, so a program stuck printing cannot fill a disk.
 */
import {
  appendFileSync,
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';

const MAX_BYTES = 1024 * 1024;

export function runLogPath(dataDir: string, runId: string): string {
  // Run ids may hold '/', ':' and '@': each byte outside a safe set is spelled out, so no id escapes the folder.
  const name = runId.replace(/[^A-Za-z0-9._-]/g, (c) => `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
  return join(dataDir, 'run-logs', `${name === '.' || name === '..' ? `%2e${name.slice(1)}` : name}.log`);
}

/** Appends one line: `<epoch seconds> <stream> <text>`. */
export function appendRunLog(
  dataDir: string,
  runId: string,
  stream: 'stdout' | 'stderr' | 'worker',
  text: string,
): void {
  const path = runLogPath(dataDir, runId);
  mkdirSync(join(dataDir, 'run-logs'), { recursive: true });
  const line = `${(Date.now() / 1000).toFixed(3)} ${stream} ${text.replace(/[\r\n]+/g, ' ').slice(0, 4000)}\n`;
  appendFileSync(path, line);
  if (statSync(path).size > MAX_BYTES) {
    const kept = readFileSync(path, 'utf8').slice(-MAX_BYTES / 2);
    writeFileSync(path, kept.slice(kept.indexOf('\n') + 1));
  }
}

export interface RunLogLine {
  at: number;
  stream: string;
  text: string;
}

/** The last `n` lines (reads only the file's tail), oldest first; none when the run printed nothing. */
export function tailRunLog(dataDir: string, runId: string, n = 20): RunLogLine[] {
  const path = runLogPath(dataDir, runId);
  if (!existsSync(path)) return [];
  const size = statSync(path).size;
  const length = Math.min(size, 64 * 1024);
  const buffer = Buffer.alloc(length);
  const fd = openSync(path, 'r');
  try {
    readSync(fd, buffer, 0, length, size - length);
  } finally {
    closeSync(fd);
  }
  const lines = buffer.toString('utf8').split('\n').filter(Boolean);
  if (length < size) lines.shift(); // the first is cut mid-line
  return lines.slice(-n).map((line) => {
    const [at, stream, ...rest] = line.split(' ');
    return { at: Number(at), stream: stream ?? '', text: rest.join(' ') };
  });
}
