/**
 * OpenTelemetry traces, on only when configured by the standard variables (OTEL_EXPORTER_OTLP_ENDPOINT or
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_SERVICE_NAME, OTEL_EXPORTER_OTLP_HEADERS; OTEL_SDK_DISABLED=true
 * turns them off). Unconfigured it costs one boolean per call site: no @opentelemetry module is imported.
 * The packages are optional peers, imported below only with import(); the package build marks each such import for
 * webpack and Turbopack to leave to Node at run time, so a Next.js app that bundles waybill builds without them
 * (scripts/build-package.ts, leaveOptionalPeersToRunTime), and esbuild leaves them too (see rethrow).
 *
 * Parents are explicit: a span's parent is a W3C traceparent (the run's, kept in its row; the run span's; a
 * client's header), never an ambient context, so a resumed run on another worker continues the same trace and no
 * context manager is installed in the user's process.
 *
 * Spans go out through a batch processor with a short delay: a worker killed with SIGKILL loses at most that
 * much of what had ended. A span still open when the process dies (the step in flight) is never exported; its
 * takeover's attempt is.
 */
import { tracingConfig } from './config';

export type SpanAttributes = Record<string, string | number | boolean>;

export interface Span {
  /** This span's context as a W3C traceparent: what its children (a program, a client, a later execution) continue. */
  readonly traceparent: string;
  set(attributes: SpanAttributes): void;
  /** Ends the span; an error marks it failed and is recorded as its exception. */
  end(error?: unknown): void;
}

export interface SpanOptions {
  /** The parent's traceparent; none (or a malformed one): a new trace. */
  parent?: string | null;
  attributes?: SpanAttributes;
  kind?: 'internal' | 'server' | 'client';
  /** When it began (epoch ms), if before now: a step a client executed, known at its commit. */
  startTime?: number;
}

/** How long an ended span may wait for its export: what a SIGKILL can lose. */
const EXPORT_DELAY_MS = 200;

let enabled: boolean | undefined;
/** Whether spans are made: the one check every call site makes first. */
export function tracingEnabled(): boolean {
  if (enabled === undefined) {
    const cfg = tracingConfig();
    enabled =
      cfg.OTEL_SDK_DISABLED !== 'true' &&
      (cfg.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT !== undefined || cfg.OTEL_EXPORTER_OTLP_ENDPOINT !== undefined);
  }
  return enabled;
}

type Sdk = NonNullable<Awaited<ReturnType<typeof load>>>;
let sdk: Promise<Sdk | null> | undefined;

/**
 * The SDK, or null when its packages are not installed (`npm install --omit=optional`): then tracing turns off,
 * said once as a process warning, and nothing that traced fails for it.
 */
function loaded(): Promise<Sdk | null> {
  sdk ??= load().catch((error: unknown) => {
    enabled = false;
    process.emitWarning(
      `tracing is configured (OTEL_EXPORTER_OTLP_ENDPOINT) but the OpenTelemetry packages did not load, so nothing is traced: ${(error as Error).message}`,
      { code: 'WAYBILL_TRACING_OFF' },
    );
    return null;
  });
  return sdk;
}

/**
 * Each import() is followed by .catch(), which esbuild takes to mean the package may be missing: a project that
 * bundles waybill with esbuild builds without them too, and the import() is left to run time.
 */
const rethrow = (error: unknown): never => {
  throw error;
};

async function load() {
  const cfg = tracingConfig();
  const [api, core, { OTLPTraceExporter }, { resourceFromAttributes }, base, { ATTR_SERVICE_NAME }] = await Promise.all(
    [
      import('@opentelemetry/api').catch(rethrow),
      import('@opentelemetry/core').catch(rethrow),
      import('@opentelemetry/exporter-trace-otlp-http').catch(rethrow),
      import('@opentelemetry/resources').catch(rethrow),
      import('@opentelemetry/sdk-trace-base').catch(rethrow),
      import('@opentelemetry/semantic-conventions').catch(rethrow),
    ],
  );
  const url = cfg.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? `${cfg.OTEL_EXPORTER_OTLP_ENDPOINT}/v1/traces`;
  const exporter = new OTLPTraceExporter({ url, headers: parseHeaders(cfg.OTEL_EXPORTER_OTLP_HEADERS) });
  const provider = new base.BasicTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: cfg.OTEL_SERVICE_NAME }),
    spanProcessors: [new base.BatchSpanProcessor(exporter, { scheduledDelayMillis: EXPORT_DELAY_MS })],
  });
  return { api, propagator: new core.W3CTraceContextPropagator(), provider, tracer: provider.getTracer('waybill') };
}

function parseHeaders(text: string | undefined): Record<string, string> {
  if (!text) return {};
  return Object.fromEntries(
    text.split(',').map((pair) => {
      const at = pair.indexOf('=');
      return [pair.slice(0, at).trim(), decodeURIComponent(pair.slice(at + 1).trim())];
    }),
  );
}

/** A span, or null when tracing is off. The first one loads the SDK. */
export async function startSpan(name: string, options: SpanOptions = {}): Promise<Span | null> {
  if (!tracingEnabled()) return null;
  const loadedSdk = await loaded();
  if (!loadedSdk) return null;
  const { api, propagator, tracer } = loadedSdk;
  const parent = options.parent
    ? propagator.extract(api.ROOT_CONTEXT, { traceparent: options.parent }, api.defaultTextMapGetter)
    : api.ROOT_CONTEXT;
  const kind = { internal: api.SpanKind.INTERNAL, server: api.SpanKind.SERVER, client: api.SpanKind.CLIENT }[
    options.kind ?? 'internal'
  ];
  const span = tracer.startSpan(name, { kind, attributes: options.attributes, startTime: options.startTime }, parent);
  const carrier: Record<string, string> = {};
  propagator.inject(api.trace.setSpan(api.ROOT_CONTEXT, span), carrier, api.defaultTextMapSetter);
  return {
    traceparent: carrier.traceparent!,
    set: (attributes) => span.setAttributes(attributes),
    end: (error) => {
      if (error !== undefined) {
        span.recordException(error instanceof Error ? error : String(error));
        span.setStatus({
          code: api.SpanStatusCode.ERROR,
          message: error instanceof Error ? error.message : String(error),
        });
      }
      span.end();
    },
  };
}

/**
 * fn inside a span (null when tracing is off), ended as fn settles: `done` names the attributes a result earns
 * (a step's outcome), `failed` those of an error (and the span is marked failed unless `failed` says it is not).
 */
export async function inSpan<T>(
  name: string,
  options: SpanOptions & {
    done?: (result: T) => SpanAttributes;
    failed?: (error: unknown) => SpanAttributes & { ok?: boolean };
  },
  fn: (span: Span | null) => Promise<T>,
): Promise<T> {
  if (!tracingEnabled()) return fn(null);
  const span = await startSpan(name, options);
  try {
    const result = await fn(span);
    if (options.done) span?.set(options.done(result));
    span?.end();
    return result;
  } catch (error) {
    const { ok, ...attributes } = options.failed?.(error) ?? {};
    span?.set(attributes);
    span?.end(ok ? undefined : error);
    throw error;
  }
}

/** A span that has ended already (from startTime to now), or nothing when tracing is off. */
export async function recordSpan(name: string, options: SpanOptions, error?: unknown): Promise<void> {
  if (!tracingEnabled()) return;
  (await startSpan(name, options))?.end(error);
}

/** Exports what has ended; a process that stops calls it (a SIGKILL does not get to). */
export async function flushTraces(): Promise<void> {
  await (await sdk)?.provider.forceFlush();
}
