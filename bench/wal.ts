/**
 * What a SQLite file's writers appended to its WAL over a measured stretch: frames (one page written whole each)
 * and commits, read from SQLite's own counters in the wal-index header (the `-shm` file every connection maps):
 * `mxFrame`, the last valid frame, and `iChange`, bumped by each commit that wrote frames.
 *
 * A checkpoint that finishes lets the next writer start the WAL over from frame 0, which would lose the count.
 * So the meter holds a read transaction open on a connection of its own from `begin` to `end`: while a reader
 * uses the WAL, SQLite neither backfills past that reader's snapshot nor restarts the log, so `mxFrame` only
 * grows. If the reader's snapshot was of a fully checkpointed WAL, the first writer may still restart it once,
 * before it appends anything; the header's salts, new for each WAL started over, say whether it did.
 * The price: no checkpoint runs inside the stretch, so what it measured excludes the checkpoints' own writes.
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { endianness } from 'node:os';
import Database from 'better-sqlite3';

/** Appended over one stretch. */
export interface WalCount {
  /** WAL frames written: pages, each `pageSize` bytes plus a 24-byte frame header. */
  pages: number;
  /** Commits that wrote frames: one fsync of the WAL each at synchronous FULL, none at NORMAL. */
  commits: number;
}

interface Header {
  change: number;
  frames: number;
  salt: number;
}

export interface WalMeter {
  /** Starts a stretch; `empty` first checkpoints and truncates the WAL (no other connection may be mid-transaction). */
  begin(options?: { empty?: boolean }): void;
  end(): WalCount;
  close(): void;
}

export function walMeter(path: string): WalMeter {
  const db = new Database(path, { timeout: 5000 });
  if (db.pragma('journal_mode', { simple: true }) !== 'wal') throw new Error(`${path} is not in WAL mode`);
  const read = db.prepare('SELECT 1 FROM sqlite_schema LIMIT 1');
  const shm = openSync(`${path}-shm`, 'r');
  let start: Header | null = null;

  return {
    begin(options = {}) {
      if (start) throw new Error('the WAL meter is already counting');
      if (options.empty) {
        const [result] = db.pragma('wal_checkpoint(TRUNCATE)') as { busy: number }[];
        if (result?.busy) throw new Error(`${path}: the WAL could not be emptied, a connection is mid-transaction`);
      }
      db.exec('BEGIN');
      read.get(); // the read transaction starts at the first read
      start = header(shm, path);
    },
    end() {
      if (!start) throw new Error('the WAL meter is not counting');
      const end = header(shm, path);
      db.exec('COMMIT');
      const from = start;
      start = null;
      // A new salt is a new WAL: started over (at most once under the reader, before anything was appended).
      const restarted = end.salt !== from.salt;
      if (!restarted && end.frames < from.frames) throw new Error(`${path}: the WAL shrank under a reader`);
      return {
        pages: restarted ? end.frames : end.frames - from.frames,
        commits: (end.change - from.change) >>> 0,
      };
    },
    close() {
      if (db.inTransaction) db.exec('COMMIT');
      db.close();
      closeSync(shm);
    },
  };
}

const buffer = Buffer.alloc(96);
const u32 = endianness() === 'LE' ? buffer.readUInt32LE.bind(buffer) : buffer.readUInt32BE.bind(buffer);

/**
 * The wal-index header: two copies of 48 bytes, the second written first, so equal copies are a whole one
 * (SQLite's own readers check the same). Native byte order, but the salts are copied from the WAL file's
 * header, big-endian.
 */
function header(fd: number, path: string): Header {
  for (let tries = 0; tries < 1000; tries++) {
    readSync(fd, buffer, 0, 96, 0);
    if (buffer[12] === 1 && buffer.subarray(0, 48).equals(buffer.subarray(48, 96))) {
      return { change: u32(8), frames: u32(16), salt: buffer.readUInt32BE(32) };
    }
  }
  throw new Error(`${path}-shm: no consistent wal-index header in 1000 reads`);
}
