/**
 * The notification sink of the notify workflow: a JSON-lines file that honours idempotency keys, the way a
 * payment or messaging API does. A delivery whose key is already delivered is refused and recorded as a
 * `duplicate` line, so the count of duplicates is the count of times exactly-once was saved by the receiver
 * rather than by the checkpoint (a worker killed after delivering and before committing).
 *
 * Many processes append to one outbox. Check-and-append happens under a file lock (./file-lock.ts), in one
 * synchronous section: read what others appended since our last read, check the key, append, fsync, unlock.
 * A SIGKILL can land anywhere; the line is in the file (fsynced) before the lock is let go, or not at all.
 */
import { appendFileSync, closeSync, fstatSync, fsyncSync, openSync, readFileSync, readSync } from 'node:fs';
import { resolve } from 'node:path';
import { withFileLock } from './file-lock';

export interface Delivery {
  key: string;
  step: number | null;
  worker: string | null;
  pid: number;
  /** Epoch seconds, as everywhere in Waybill. */
  time: number;
  status: 'delivered' | 'duplicate';
}

export interface OutboxOptions {
  lockTimeoutMs?: number;
  /** Test hook: called holding the lock, before anything is read. Crash tests block here and get killed. */
  insideLock?: (key: string) => void;
}

export class Outbox {
  readonly lockPath: string;
  /** Keys delivered in the file up to `offset`. */
  private readonly delivered = new Set<string>();
  private offset = 0;
  private inode = -1;

  constructor(
    readonly path: string,
    private readonly options: OutboxOptions = {},
  ) {
    this.lockPath = `${path}.lock`;
  }

  /** Delivers once per key: the first call writes `delivered`, every later one writes `duplicate`. */
  deliver(
    request: { key: string; step?: number | null; worker?: string | null },
    options: { signal?: AbortSignal } = {},
  ): Promise<Delivery> {
    return withFileLock(this.lockPath, () => this.checkAndAppend(request), {
      signal: options.signal,
      timeoutMs: this.options.lockTimeoutMs,
    });
  }

  /** Runs under the lock; no await may ever appear here. */
  private checkAndAppend(request: { key: string; step?: number | null; worker?: string | null }): Delivery {
    this.options.insideLock?.(request.key);
    const fd = openSync(this.path, 'a+');
    try {
      const { ino, size } = fstatSync(fd);
      if (ino !== this.inode || size < this.offset) this.reset(ino);
      this.catchUp(fd, size);
      const delivery: Delivery = {
        key: request.key,
        step: request.step ?? null,
        worker: request.worker ?? null,
        pid: process.pid,
        time: Date.now() / 1000,
        status: this.delivered.has(request.key) ? 'duplicate' : 'delivered',
      };
      // Bytes past our offset are a line torn by a writer that died mid-append: end it, so ours stays whole.
      const text = `${this.offset < size ? '\n' : ''}${JSON.stringify(delivery)}\n`;
      appendFileSync(fd, text);
      fsyncSync(fd);
      this.offset = size + Buffer.byteLength(text);
      if (delivery.status === 'delivered') this.delivered.add(request.key);
      return delivery;
    } finally {
      closeSync(fd);
    }
  }

  /** The file was replaced or truncated since we read it: start over. */
  private reset(inode: number): void {
    this.delivered.clear();
    this.offset = 0;
    this.inode = inode;
  }

  /** Indexes the complete lines others appended since our last read. */
  private catchUp(fd: number, size: number): void {
    if (size <= this.offset) return;
    const buffer = Buffer.alloc(size - this.offset);
    let read = 0;
    while (read < buffer.length) {
      const n = readSync(fd, buffer, read, buffer.length - read, this.offset + read);
      if (n === 0) break;
      read += n;
    }
    const end = buffer.lastIndexOf(0x0a, read - 1);
    if (end < 0) return;
    for (const line of buffer.toString('utf8', 0, end).split('\n')) {
      const parsed = parseLine(line);
      if (parsed?.status === 'delivered') this.delivered.add(parsed.key);
    }
    this.offset += end + 1;
  }
}

const outboxes = new Map<string, Outbox>();

/** One Outbox per file in a process, so its index is read once and then only extended. */
export function outboxAt(path: string): Outbox {
  const absolute = resolve(path);
  let outbox = outboxes.get(absolute);
  if (!outbox) outboxes.set(absolute, (outbox = new Outbox(absolute)));
  return outbox;
}

export interface OutboxSummary {
  delivered: number;
  duplicates: number;
  /** Delivered lines per key: 1 for every key when exactly-once held. */
  byKey: Map<string, number>;
  /** Lines that are not a delivery (torn by a writer killed mid-append). */
  unreadable: number;
}

/** Counts an outbox's lines; a missing file is an empty outbox. */
export function readOutbox(path: string): OutboxSummary {
  const summary: OutboxSummary = { delivered: 0, duplicates: 0, byKey: new Map(), unreadable: 0 };
  for (const line of outboxLines(path)) {
    const parsed = parseLine(line);
    if (parsed?.status === 'delivered') {
      summary.delivered++;
      summary.byKey.set(parsed.key, (summary.byKey.get(parsed.key) ?? 0) + 1);
    } else if (parsed?.status === 'duplicate') summary.duplicates++;
    else summary.unreadable++;
  }
  return summary;
}

/** An outbox's deliveries in order, with who made each; a line torn by a kill mid-append is left out. */
export function readDeliveries(path: string): Delivery[] {
  return outboxLines(path).flatMap((line) => parseLine(line) ?? []);
}

/** The file's lines but empty ones; none for a missing file. */
function outboxLines(path: string): string[] {
  try {
    return readFileSync(path, 'utf8')
      .split('\n')
      .filter((line) => line !== '');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
}

/** A delivery line, or null for one that is not (torn by a writer killed mid-append). */
function parseLine(line: string): Delivery | null {
  try {
    const value = JSON.parse(line) as Partial<Delivery> | null;
    return typeof value?.key === 'string' && (value.status === 'delivered' || value.status === 'duplicate')
      ? (value as Delivery)
      : null;
  } catch {
    return null;
  }
}
