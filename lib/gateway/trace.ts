/**
 * A model call through the gateway as a GenAI client span (the OpenTelemetry semantic conventions' gen_ai.*
 * attributes), in the trace of the request (its traceparent header, as an instrumented SDK sends it) or else of
 * its run (the trace context kept in its row). A call answered from the store is one too, marked replayed.
 * Only with tracing on (lib/tracing.ts); a span that cannot be made never fails the call.
 */
import { traceparentProblem } from '../domain/traceparent';
import type { Store } from '../store/contract';
import { recordSpan, type SpanAttributes, tracingEnabled } from '../tracing';
import type { GatewayRoute } from './routes';

const OPERATION: Record<GatewayRoute['api'], string> = {
  'openai.chat': 'chat',
  'openai.responses': 'chat',
  'openai.embeddings': 'embeddings',
  'anthropic.messages': 'chat',
  // A call the run reported itself (ctx.recordUsage) never comes through here; named for completeness.
  recorded: 'chat',
};

export interface ModelSpan {
  api: GatewayRoute['api'];
  runId: string | null;
  idemKey: string | null;
  requestModel: string | null;
  /** The upstream's own word for the model that answered, when it said. */
  responseModel?: string | null;
  inputTokens?: number | null;
  outputTokens?: number | null;
  replayed: boolean;
  /** The upstream's error status, or why the call did not complete. */
  error?: string;
  startTime: number;
}

export async function modelSpan(store: Pick<Store, 'getRun'>, headers: Headers, call: ModelSpan): Promise<void> {
  if (!tracingEnabled()) return;
  try {
    const header = headers.get('traceparent')?.trim().toLowerCase();
    const given = header && traceparentProblem(header) === undefined ? header : null;
    const parent = given ?? (call.runId ? ((await store.getRun(call.runId))?.traceparent ?? null) : null);
    const operation = OPERATION[call.api];
    const system = call.api.startsWith('anthropic') ? 'anthropic' : 'openai';
    const attributes: SpanAttributes = {
      'gen_ai.operation.name': operation,
      'gen_ai.system': system,
      'gen_ai.provider.name': system,
      'waybill.replayed': call.replayed,
    };
    if (call.requestModel) attributes['gen_ai.request.model'] = call.requestModel;
    if (call.responseModel) attributes['gen_ai.response.model'] = call.responseModel;
    if (call.inputTokens != null) attributes['gen_ai.usage.input_tokens'] = call.inputTokens;
    if (call.outputTokens != null) attributes['gen_ai.usage.output_tokens'] = call.outputTokens;
    if (call.runId) attributes['waybill.run_id'] = call.runId;
    if (call.idemKey) attributes['waybill.key'] = call.idemKey;
    await recordSpan(
      call.requestModel ? `${operation} ${call.requestModel}` : operation,
      { parent, kind: 'client', attributes, startTime: call.startTime },
      call.error === undefined ? undefined : new Error(call.error),
    );
  } catch {
    // A trace is worth less than the call it describes.
  }
}
