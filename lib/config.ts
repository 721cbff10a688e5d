/**
 * The only place that reads process.env. Parsed once with zod; a bad value stops the process with a
 * message naming the variable, before anything is opened or written.
 */
import { availableParallelism } from 'node:os';
import { dirname, resolve } from 'node:path';
import { z } from 'zod';
import { traceparentProblem } from './domain/traceparent';
import { durationSchema, MIN_RETENTION_MS } from './duration';
import { ConfigError } from './errors';
import { PG_SCHEMA_NAME } from './store/shared/dialects';
import { DEFAULT_LOG_KEEP, MAX_LOG_KEEP } from './store/shared/log-lines';
import { SQLITE_MIN_LEASE_MS } from './store/shared/sqlite-timeouts';
import { MAX_WAITS_PER_RUN_DEFAULT } from './store/shared/waits';

const HOUR_MS = 3_600_000;

/**
 * A whole number of `unit` from `min` to `max` (none: no upper bound), read from the variable's text, with one
 * message for every way it can be wrong (not a number, a fraction, out of range) naming the unit and the range.
 */
function whole(unit: string, min: number, max?: number) {
  const says = `must be a whole number of ${unit}, ${max === undefined ? `at least ${min}` : `${min}-${max}`}`;
  const number = z.coerce.number({ error: says }).int(says).min(min, says);
  return max === undefined ? number : number.max(max, says);
}

/**
 * The most WAYBILL_MAX_BODY_BYTES may be. Next's own cap for an action's body is fixed at build time a quarter
 * above it (next.config.js), so that whatever the limit is set to, the dashboard's actions accept it.
 */
export const MAX_BODY_BYTES_CEILING = 64 * 1024 * 1024;

/** pino's levels, least verbose first, and `silent`: what LOG_LEVEL accepts. */
export const LOG_LEVELS = ['silent', 'fatal', 'error', 'warn', 'info', 'debug', 'trace'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Long and plain enough to be a secret and to travel in a header. */
const token = z
  .string()
  .min(16, 'must be at least 16 characters (try: openssl rand -hex 24)')
  .max(256, 'must be at most 256 characters')
  .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces');

/**
 * The control plane's address as a worker's programs reach it (WAYBILL_URL, `waybill worker --url`): an http(s)
 * URL, its trailing slashes dropped so paths join onto it.
 */
export const controlPlaneUrl = z
  .url({ protocol: /^https?$/, error: "must be the dashboard's http(s) address, e.g. http://127.0.0.1:3000" })
  .transform((u) => u.replace(/\/+$/, ''));

/** A port to listen on (WAYBILL_GATEWAY_PORT and --port, WAYBILL_HEALTH_PORT and --health-port); 0: any free one. */
export const tcpPort = z.coerce
  .number({ error: 'must be a TCP port number, 0-65535' })
  .int('must be a TCP port number, 0-65535')
  .min(0, 'must be a TCP port number, 0-65535')
  .max(65_535, 'must be a TCP port number, 0-65535');

/** A PostgreSQL schema for Waybill's tables (WAYBILL_PG_SCHEMA, `waybill migrate --move-to-schema`). */
export const pgSchemaName = z
  .string()
  .regex(PG_SCHEMA_NAME, 'must be a lowercase SQL identifier (letters, digits, _), e.g. waybill');

/**
 * The OpenTelemetry settings (lib/tracing.ts): part of the whole, and parsed on their own by tracingConfig(), so a
 * library user's Worker decides whether to trace without the rest of Waybill's environment having to parse.
 */
const TRACING = {
  /**
   * OpenTelemetry (lib/tracing.ts): the OTLP/HTTP collector's base URL; traces go to its /v1/traces. Unset (and
   * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT unset): nothing is traced, and no OpenTelemetry module is loaded.
   */
  OTEL_EXPORTER_OTLP_ENDPOINT: z
    .url({
      protocol: /^https?$/,
      error: 'must be an http(s) URL of an OTLP/HTTP collector, e.g. http://127.0.0.1:4318',
    })
    .transform((u) => u.replace(/\/+$/, ''))
    .optional(),
  /** The OTLP/HTTP traces URL itself (used as given), over OTEL_EXPORTER_OTLP_ENDPOINT. */
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z
    .url({ protocol: /^https?$/, error: 'must be an http(s) URL, e.g. http://127.0.0.1:4318/v1/traces' })
    .optional(),
  /** Headers sent with each export (a collector's key): `name=value` pairs, comma separated. */
  OTEL_EXPORTER_OTLP_HEADERS: z
    .string()
    .regex(/^\s*[^=,\s]+\s*=[^,]*(,\s*[^=,\s]+\s*=[^,]*)*$/, 'must be name=value pairs, comma separated')
    .optional(),
  /** The traces' service.name: give each kind of process its own (a worker, the dashboard, the gateway). */
  OTEL_SERVICE_NAME: z.string().min(1, 'must not be empty').default('waybill-worker'),
  /** `true`: trace nothing whatever the endpoints say (OpenTelemetry's own off switch). */
  OTEL_SDK_DISABLED: z.enum(['true', 'false', ''], { error: 'must be true or false' }).default('false'),
};

const schema = z
  .object({
    /** The store: `file:<path>` for SQLite, `postgres://…` for PostgreSQL. */
    DATABASE_URL: z
      .string()
      .regex(/^(file:|postgres:\/\/|postgresql:\/\/)/, 'must start with file: (SQLite) or postgres:// (PostgreSQL)')
      .default('file:./data/waybill.db'),
    /**
     * Where files a run writes may be (the notify workflow's outboxes). Unset: the SQLite file's directory, or
     * ./data on PostgreSQL. See dataDir().
     */
    WAYBILL_DATA_DIR: z
      .string()
      .min(1, 'must be a directory path')
      .refine((p) => !p.includes('\0'), 'must not contain NUL')
      .optional(),
    /**
     * SQLite's `synchronous`: `full` fsyncs the WAL at every commit (a committed step survives a power loss);
     * `normal` survives any crash of the process, but the last commits before a power loss may roll back.
     */
    WAYBILL_SQLITE_SYNC: z.enum(['full', 'normal']).default('full'),
    /**
     * Group commit: the claims and commits of runs in one process that are ready at the same moment share one
     * transaction (one disk flush). `off` gives every claim and commit a transaction of its own.
     */
    WAYBILL_GROUP_COMMIT: z.enum(['on', 'off'], { error: 'must be on or off' }).default('on'),
    /**
     * The control plane's address as a worker's programs reach it (http://127.0.0.1:3000): a command workflow
     * (defineCommandWorkflow) hands it to the program it spawns, with a token for its run. Unset, a worker
     * cannot run command workflows (and does not serve the python-agent demo).
     */
    WAYBILL_URL: controlPlaneUrl.optional(),
    /**
     * Who a command workflow's program runs as: a user name (looked up in /etc/passwd) or uid:gid. Unset, a worker
     * running as root runs its programs as `nobody`, and any other worker as itself (it cannot switch users).
     */
    WAYBILL_PROGRAM_USER: z
      .string()
      .regex(
        /^([A-Za-z_][A-Za-z0-9_.-]{0,31}|\d{1,10}:\d{1,10})$/,
        'must be a user name or uid:gid, e.g. nobody or 65534:65534',
      )
      .optional(),
    /**
     * `waybill worker`, `dashboard` and `up` exit (as on SIGTERM) when the process that started them goes, so a
     * `kill -9` of npx's npm does not leave them running. `off` lets them outlive it (nohup, setsid).
     */
    WAYBILL_FOLLOW_PARENT: z.enum(['on', 'off'], { error: 'must be on or off' }).default('on'),
    /** Lines each run's log keeps in the store (a command workflow's program output): the newest; older ones go. */
    WAYBILL_RUN_LOG_LINES: z.coerce
      .number({ error: `must be a whole number, 1-${MAX_LOG_KEEP}` })
      .int(`must be a whole number, 1-${MAX_LOG_KEEP}`)
      .min(1, `must be a whole number, 1-${MAX_LOG_KEEP}`)
      .max(MAX_LOG_KEEP, `must be a whole number, 1-${MAX_LOG_KEEP}`)
      .default(DEFAULT_LOG_KEEP),
    /**
     * The least severe log line written (pino's levels): `info` has the run-level events (a run started,
     * completed, failed; a worker started, stopped), `debug` adds a line per step, `silent` writes none.
     */
    LOG_LEVEL: z.enum(LOG_LEVELS, { error: `must be one of ${LOG_LEVELS.join(', ')}` }).default('info'),
    /** https://no-color.org: set and not empty, terminal output has no colour (readable log lines stay readable). */
    NO_COLOR: z
      .string()
      .optional()
      .transform((v) => v !== undefined && v !== ''),
    /** How long a claim written by an outside client (no lease column) lives after its `claimed_at`. */
    WAYBILL_CLAIM_TTL_MS: whole('milliseconds', 1).default(30_000),
    /**
     * How long a step's claim lives without renewal (renewed every third of it while the step runs); on SQLite
     * the wait for the write lock is two thirds of it, at most 5 s.
     */
    WAYBILL_LEASE_MS: whole('milliseconds', 100).default(30_000),
    /** A run's lease: a worker silent this long (and not provably dead on this host) loses its runs. */
    WAYBILL_RUN_LEASE_MS: whole('milliseconds', 100).default(30_000),
    /**
     * How long an idle worker waits before it looks for a runnable run again (jittered ±50%) while the store
     * delivers no wakes (the listener is down). With wakes delivered, WAYBILL_IDLE_POLL_MS applies instead. Either
     * way a worker never sleeps past a parked run's wake time (a sleep, a timeout), and a run queued anywhere (a
     * start, a decision, a retry) wakes it at once.
     */
    WAYBILL_POLL_MS: whole('milliseconds', 10, 600000).default(250),
    /** How often workers heartbeat, renew run leases (and so notice pause/cancel) and look for dead peers. */
    WAYBILL_HEARTBEAT_MS: whole('milliseconds', 20, 60_000).default(1000),
    /**
     * An OpenAI-compatible chat-completions URL: the `agent-batch` demo calls it instead of its simulated model,
     * sending each step's idempotency key as `Idempotency-Key`.
     */
    WAYBILL_MODEL_URL: z
      .url({ protocol: /^https?$/, error: 'must be an http(s) URL of an OpenAI-compatible chat-completions endpoint' })
      .optional(),
    /** The model `agent-batch` asks WAYBILL_MODEL_URL for. */
    WAYBILL_MODEL_NAME: z.string().min(1, 'must not be empty').optional(),
    /** The bearer token `agent-batch` sends to WAYBILL_MODEL_URL. */
    WAYBILL_MODEL_API_KEY: z.string().optional(),
    /** How long one model call of `agent-batch` may take. */
    WAYBILL_MODEL_TIMEOUT_MS: whole('milliseconds', 1).default(60_000),
    /** `waybill gateway`: the address the model gateway listens on; loopback unless an operator says otherwise. */
    WAYBILL_GATEWAY_HOST: z
      .string()
      .regex(/^[A-Za-z0-9.:-]+$/, 'must be an IP address or host name to listen on, e.g. 127.0.0.1 or ::1')
      .default('127.0.0.1'),
    /** `waybill gateway`: the port the model gateway listens on (0: any free port, printed at start). */
    WAYBILL_GATEWAY_PORT: tcpPort.default(4010),
    /** Where the gateway sends OpenAI requests: the API's base URL, as the openai SDK's `baseURL` takes it. */
    WAYBILL_GATEWAY_OPENAI_URL: z
      .url({ protocol: /^https?$/, error: 'must be an http(s) URL such as https://api.openai.com/v1' })
      .transform((u) => u.replace(/\/+$/, ''))
      .default('https://api.openai.com/v1'),
    /** The OpenAI key the gateway sends upstream. Only the gateway holds it: sandboxes send their run token. */
    WAYBILL_GATEWAY_OPENAI_KEY: z.string().min(1, 'must not be empty').optional(),
    /** Where the gateway sends Anthropic requests: the API's base URL, as the @anthropic-ai/sdk `baseURL` takes it. */
    WAYBILL_GATEWAY_ANTHROPIC_URL: z
      .url({ protocol: /^https?$/, error: 'must be an http(s) URL such as https://api.anthropic.com' })
      .transform((u) => u.replace(/\/+$/, ''))
      .default('https://api.anthropic.com'),
    /** The Anthropic key the gateway sends upstream (as x-api-key). Only the gateway holds it. */
    WAYBILL_GATEWAY_ANTHROPIC_KEY: z.string().min(1, 'must not be empty').optional(),
    /**
     * A JSON price table replacing the shipped one (lib/gateway/prices-shipped.ts): USD per million tokens in, cached
     * in and out, by model. Calls of a model it does not price are recorded with no cost.
     */
    WAYBILL_GATEWAY_PRICES: z.string().min(1, 'must be the path of a JSON price table').optional(),
    /** How long one upstream call may take before the gateway gives up on it (and stores nothing). */
    WAYBILL_GATEWAY_TIMEOUT_MS: whole('milliseconds', 1).default(600_000),
    /**
     * The lease a call in flight holds on its key, renewed while the upstream answers: a second request with the
     * key waits this long after the first's gateway died before it asks the upstream itself.
     */
    WAYBILL_GATEWAY_LEASE_MS: whole('milliseconds', 100).default(30_000),
    /**
     * Workers prune finished runs older than this (ms), at start and then hourly. Unset: they never prune.
     * No --force here: a setting that silently voids deduplication is worse than a refused start.
     */
    WAYBILL_PRUNE_OLDER_THAN: durationSchema
      .pipe(
        z
          .number()
          .min(MIN_RETENTION_MS, 'must be at least 24h: a pruned idempotency key can no longer deduplicate a retry'),
      )
      .optional(),
    /**
     * Workers delete the rows of workers stopped, or silent, for longer than this (ms), at start and then hourly,
     * so the table and every read of it follow the live fleet. A row a running run names as owner is kept.
     */
    WAYBILL_WORKER_RETENTION: durationSchema
      .pipe(z.number().min(HOUR_MS, 'must be at least 1h: a worker silent for less may only be paused'))
      .default(24 * HOUR_MS),
    /**
     * How often an idle worker looks for runnable runs while wakes are delivered (PostgreSQL LISTEN/NOTIFY,
     * SQLite's data_version): the fallback for what no commit announces, a run lease passing or a sleep ending.
     * While wakes are not delivered it looks every WAYBILL_POLL_MS.
     */
    WAYBILL_IDLE_POLL_MS: whole('milliseconds', 100, 600000).default(2000),
    /** How often each worker looks at the alert webhooks' outbox for deliveries due: a delivery goes out at most this late. */
    WAYBILL_WEBHOOK_POLL_MS: whole('milliseconds', 50, 600000).default(1000),
    /** How long a webhook receiver may take to answer before the attempt counts as failed. */
    WAYBILL_WEBHOOK_TIMEOUT_MS: whole('milliseconds', 100, 600000).default(10000),
    /** The first wait before a failed webhook delivery is tried again; doubled each attempt up to WAYBILL_WEBHOOK_MAX_RETRY_MS, each wait drawn at random below it. */
    WAYBILL_WEBHOOK_RETRY_MS: whole('milliseconds', 10, 3600000).default(5000),
    /** The longest wait between two attempts of a webhook delivery. */
    WAYBILL_WEBHOOK_MAX_RETRY_MS: whole('milliseconds', 10, 86400000).default(3600000),
    /** Attempts of a webhook delivery before it is marked failed (it can be re-sent: `waybill webhook resend`). */
    WAYBILL_WEBHOOK_ATTEMPTS: whole('attempts', 1, 100).default(10),
    /** Connections each process keeps to PostgreSQL. */
    WAYBILL_PG_POOL_SIZE: whole('connections', 1, 1000).default(10),
    /**
     * Where the PostgreSQL connections that need a session of their own go (the wake listener's LISTEN, each
     * worker's liveness lock) when DATABASE_URL is a transaction pooler: the database itself, or a session-mode
     * pool. Unset: DATABASE_URL.
     */
    WAYBILL_PG_SESSION_URL: z
      .string()
      .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL (a direct or session-mode connection)')
      .optional(),
    /**
     * The PostgreSQL schema of Waybill's tables (`?schema=` in DATABASE_URL says the same). Unset: `waybill`, or
     * `public` where an older Waybill made its store there. Nothing is created outside it.
     */
    WAYBILL_PG_SCHEMA: pgSchemaName.optional(),
    /**
     * Whether workers, `waybill up`, `npm start` and the dashboard's server create or upgrade the store when they
     * open it. `off` for teams that migrate in their deploy step (`waybill migrate`): a store that is behind is then
     * refused, with the fix. Read-only commands never migrate.
     */
    WAYBILL_MIGRATE: z.enum(['on', 'off'], { error: 'must be on or off' }).default('on'),
    /** `off` for a pooler in transaction mode that does not follow named prepared statements (PgBouncer < 1.21). */
    WAYBILL_PG_NAMED_STATEMENTS: z.enum(['on', 'off'], { error: 'must be on or off' }).default('on'),
    /**
     * The user's workflow module (what `waybill worker --workflows` takes): a .js/.mjs file, or .ts where the
     * user runs TypeScript. Its workflows are served next to the built-ins and published in the store.
     */
    WAYBILL_WORKFLOWS: z.string().min(1, 'must be the path of a module that exports workflows').optional(),
    /**
     * `waybill worker`: the port its /livez, /readyz and /metrics are served on (`--health-port`), for a
     * Kubernetes probe and a Prometheus scrape of the pod. Unset: none served. 0: any free port, logged at start.
     */
    WAYBILL_HEALTH_PORT: tcpPort.optional(),
    /**
     * `waybill worker`: the address the health port listens on. Every interface by default, as a kubelet and
     * Prometheus reach the pod by its IP; the port answers reads only, and names no secret.
     */
    WAYBILL_HEALTH_HOST: z
      .string()
      .regex(/^[A-Za-z0-9.:-]+$/, 'must be an IP address or host name to listen on, e.g. 0.0.0.0 or 127.0.0.1')
      .default('0.0.0.0'),
    /** `npm start`: the port the dashboard listens on. */
    PORT: z.coerce
      .number({ error: 'must be a TCP port number, 1-65535' })
      .int('must be a TCP port number, 1-65535')
      .min(1, 'must be a TCP port number, 1-65535')
      .max(65_535, 'must be a TCP port number, 1-65535')
      .default(3000),
    /** `npm start`: the address the dashboard listens on; loopback unless an operator says otherwise. */
    HOST: z
      .string()
      .regex(/^[A-Za-z0-9.:-]+$/, 'must be an IP address or host name to listen on, e.g. 127.0.0.1 or ::1')
      .default('127.0.0.1'),
    /**
     * `npm start`: how many dashboard processes share the port (a Node cluster). One renders one page at a time,
     * so a second core doubles what ten refreshing browsers get; more than the cores only adds memory.
     */
    WAYBILL_WEB_PROCESSES: z.coerce
      .number({ error: 'must be a whole number, 1-64' })
      .int('must be a whole number, 1-64')
      .min(1, 'must be a whole number, 1-64')
      .max(64, 'must be a whole number, 1-64')
      .default(Math.min(2, availableParallelism())),
    /** Read and mutate: the dashboard's operator sign-in and the API's bearer token. Unset: loopback only, no sign-in. */
    WAYBILL_OPERATOR_TOKEN: token.optional(),
    /** Read only. */
    WAYBILL_VIEWER_TOKEN: token.optional(),
    /** Mixed into the session signing key; rotate it (or a token) to sign every session out. */
    WAYBILL_SESSION_SECRET: z.string().min(16, 'must be at least 16 characters').optional(),
    /** How long a dashboard session lasts, in hours (at most 720). */
    WAYBILL_SESSION_HOURS: z.coerce
      .number()
      .positive()
      .max(24 * 30, 'at most 720 hours (30 days)')
      .default(12),
    /**
     * The origin browsers reach the dashboard at, when a proxy in front changes it (https://waybill.example.com).
     * Mutations from any other origin are refused.
     */
    WAYBILL_PUBLIC_ORIGIN: z
      .url({ protocol: /^https?$/, error: 'must be an http(s) origin such as https://waybill.example.com' })
      .transform((u) => new URL(u).origin)
      .optional(),
    /**
     * Largest input, result or manual resolution accepted, in bytes (413 above it): by the API, the CLI and the
     * dashboard's forms, read when each starts. The dashboard answers a request body more than a quarter above it
     * (at least 1.25 MiB) with 413 and reads none of it past that size, whether its Content-Length declares it or
     * it is sent chunked.
     */
    WAYBILL_MAX_BODY_BYTES: z.coerce
      .number()
      .int()
      .min(1024, 'at least 1024 bytes')
      .max(MAX_BODY_BYTES_CEILING, 'at most 64 MiB')
      .default(1024 * 1024),
    /**
     * A run token's writes are bounded by what its run then holds (413 past this or the next): its keys,
     * committed and claimed. A sandbox with a token for one run otherwise writes without limit. Writes with a
     * role token are not bounded.
     */
    WAYBILL_RUN_TOKEN_MAX_KEYS: z.coerce
      .number({ error: 'must be a whole number' })
      .int('must be a whole number')
      .min(1, 'must be at least 1')
      .default(10_000),
    /** The bytes of results, recorded inputs and progress state a run token may leave in its run (413 past it). */
    WAYBILL_RUN_TOKEN_MAX_BYTES: z.coerce
      .number({ error: 'must be a whole number of bytes' })
      .int('must be a whole number of bytes')
      .min(1024, 'at least 1024 bytes')
      .default(64 * 1024 * 1024),
    ...TRACING,
    /**
     * A W3C trace context the process was started in (a traced pipeline's step): `waybill start` continues it when
     * given no --traceparent, and a command workflow's program and the Python client find theirs here. Set by
     * other tools, so a malformed one is ignored (as the W3C spec asks of a receiver), not a reason to stop.
     */
    TRACEPARENT: z
      .string()
      .optional()
      .transform((v) => (v !== undefined && traceparentProblem(v.trim()) === undefined ? v.trim() : undefined)),
    /**
     * The most durable waits (approvals, signals, sleeps) one run may hold. A signal sent before its run
     * reaches the wait is kept as a wait of its own, so without a bound signals nobody waits for grow the run
     * and its page without end; past this, a signal that would add one is refused (413) and nothing written.
     */
    WAYBILL_MAX_WAITS_PER_RUN: z.coerce
      .number({ error: 'must be a whole number' })
      .int('must be a whole number')
      .min(1, 'must be at least 1')
      .default(MAX_WAITS_PER_RUN_DEFAULT),
  })
  .refine((c) => !c.WAYBILL_OPERATOR_TOKEN || c.WAYBILL_OPERATOR_TOKEN !== c.WAYBILL_VIEWER_TOKEN, {
    path: ['WAYBILL_VIEWER_TOKEN'],
    message: 'must differ from WAYBILL_OPERATOR_TOKEN (a viewer would be an operator)',
  })
  .refine((c) => c.WAYBILL_PG_SCHEMA === undefined || !c.DATABASE_URL.startsWith('file:'), {
    path: ['WAYBILL_PG_SCHEMA'],
    message: 'is for PostgreSQL, but DATABASE_URL is a SQLite file',
  })
  .refine((c) => c.WAYBILL_PG_SESSION_URL === undefined || !c.DATABASE_URL.startsWith('file:'), {
    path: ['WAYBILL_PG_SESSION_URL'],
    message: 'is for PostgreSQL, but DATABASE_URL is a SQLite file',
  })
  .refine((c) => !c.DATABASE_URL.startsWith('file:') || c.WAYBILL_LEASE_MS >= SQLITE_MIN_LEASE_MS, {
    // The store keeps SQLite's wait for the write lock within two thirds of the lease (lib/store/shared/sqlite-timeouts.ts); below
    // this floor that wait is too short to queue behind another writer, and steps would fail instead.
    path: ['WAYBILL_LEASE_MS'],
    message:
      `is below ${SQLITE_MIN_LEASE_MS} ms, the shortest step lease on SQLite (its wait for the write lock is two thirds ` +
      'of the lease, and shorter waits fail steps under ordinary contention); raise it, or use PostgreSQL',
  });

/**
 * How the configured processes open the store: the lease bounds SQLite's wait for the write lock; the PostgreSQL
 * settings size the pool, name the schema and say where sessions go and whether statements are named; both
 * backends group-commit unless told not to, and migrate on open unless WAYBILL_MIGRATE=off (read-only callers
 * override that with migrate: false).
 */
export function storeOptions(
  cfg: Pick<
    Config,
    | 'WAYBILL_SQLITE_SYNC'
    | 'WAYBILL_LEASE_MS'
    | 'WAYBILL_PG_POOL_SIZE'
    | 'WAYBILL_PG_SESSION_URL'
    | 'WAYBILL_PG_NAMED_STATEMENTS'
    | 'WAYBILL_GROUP_COMMIT'
    | 'WAYBILL_PG_SCHEMA'
    | 'WAYBILL_MIGRATE'
  >,
): {
  migrate: boolean;
  schema?: string;
  synchronous: 'full' | 'normal';
  leaseMs: number;
  poolSize: number;
  sessionUrl?: string;
  namedStatements: boolean;
  groupCommit: boolean;
} {
  return {
    migrate: cfg.WAYBILL_MIGRATE === 'on',
    schema: cfg.WAYBILL_PG_SCHEMA,
    synchronous: cfg.WAYBILL_SQLITE_SYNC,
    leaseMs: cfg.WAYBILL_LEASE_MS,
    groupCommit: cfg.WAYBILL_GROUP_COMMIT === 'on',
    poolSize: cfg.WAYBILL_PG_POOL_SIZE,
    sessionUrl: cfg.WAYBILL_PG_SESSION_URL,
    namedStatements: cfg.WAYBILL_PG_NAMED_STATEMENTS === 'on',
  };
}

export type Config = z.infer<typeof schema>;

export function parseConfig(env: Record<string, string | undefined> = process.env): Config {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new ConfigError(`invalid environment: ${problems}`);
  }
  return parsed.data;
}

/**
 * The data directory, absolute: WAYBILL_DATA_DIR, else the directory of the SQLite file (so a store and the
 * files its runs write sit together), else ./data, the default store's directory.
 */
export function dataDir(cfg: Pick<Config, 'DATABASE_URL' | 'WAYBILL_DATA_DIR'>): string {
  if (cfg.WAYBILL_DATA_DIR) return resolve(cfg.WAYBILL_DATA_DIR);
  const file = sqliteFile(cfg.DATABASE_URL);
  return file === null ? resolve('data') : dirname(file);
}

/** The SQLite file a DATABASE_URL names, absolute; null for PostgreSQL and an in-memory store. */
export function sqliteFile(databaseUrl: string): string | null {
  if (!databaseUrl.startsWith('file:')) return null;
  const path = databaseUrl.slice('file:'.length).replace(/^\/\/(?=\/)/, '');
  return path === ':memory:' || path === '' ? null : resolve(path);
}

export type TracingConfig = z.infer<z.ZodObject<typeof TRACING>>;

let tracing: TracingConfig | undefined;
/** The OTEL_* settings alone, parsed once; a bad one stops the process naming it, as config() does. */
export function tracingConfig(env: Record<string, string | undefined> = process.env): TracingConfig {
  if (tracing && env === process.env) return tracing;
  const parsed = z.object(TRACING).safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new ConfigError(`invalid environment: ${problems}`);
  }
  if (env === process.env) tracing = parsed.data;
  return parsed.data;
}

/**
 * WAYBILL_PG_SCHEMA alone, for the library's openStore: an application that opens the store from the environment
 * its CLI and workers run with opens their store, not a second one made in `waybill`. A bad one names itself.
 */
export function pgSchemaFromEnv(env: Record<string, string | undefined> = process.env): string | undefined {
  const parsed = z.object({ WAYBILL_PG_SCHEMA: pgSchemaName.optional() }).safeParse(env);
  if (parsed.success) return parsed.data.WAYBILL_PG_SCHEMA;
  const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
  throw new ConfigError(`invalid environment: ${problems}`);
}

let cached: Config | undefined;
export function config(): Config {
  cached ??= parseConfig();
  return cached;
}
