/**
 * The OpenAPI 3.1 document of the whole HTTP API, generated from the zod schemas the routes validate with
 * (bodies, queries, path parameters) and the ones their answers are made to (responses.ts): nothing here is
 * a hand-written schema. One table of routes says which schema goes where; test/api/openapi.test.ts walks
 * app/api and fails when a route file and this table disagree, and holds real answers to the document.
 */
import { z } from 'zod';
import { auditQuery } from './audit';
import { expireBody, listClaimsQuery, resolveBody, sweepBody } from './claims';
import { emitBody, emittedSchema } from './events';
import { runRef } from './ids';
import { logsQuery } from './logs';
import {
  beginBody,
  claimBody,
  commitBody,
  endBody,
  progressBody,
  releaseBody,
  renewBody,
  streamBody,
  usageBody,
} from './protocol';
import {
  auditPageSchema,
  beginAnswerSchema,
  bulkAnswerSchema,
  claimAnswerSchema,
  claimsPageSchema,
  commitAnswerSchema,
  committedPageSchema,
  endAnswerSchema,
  errorSchema,
  expiredSchema,
  forkAnswerSchema,
  healthSchema,
  lastCostSchema,
  progressSchema,
  releaseAnswerSchema,
  renewAnswerSchema,
  rerunAnswerSchema,
  rerunPreviewSchema,
  resolvedSchema,
  runAnswerSchema,
  runDetailSchema,
  runLogPageSchema,
  runsPageSchema,
  runTokenSchema,
  runUsageSchema,
  savedSchema,
  startAnswerSchema,
  stepSchema,
  streamAnswerSchema,
  sweptSchema,
  usageAnswerSchema,
  waitAnswerSchema,
  workflowUsageSchema,
} from './responses';
import {
  actionBody,
  actionParam,
  budgetBody,
  bulkBody,
  committedQuery,
  forkBody,
  listRunsQuery,
  rerunBody,
  rewindCostQuery,
  startBody,
  stepParam,
} from './runs';
import {
  addScheduleBody,
  scheduleActionBody,
  scheduleActionParam,
  scheduleAnswerSchema,
  scheduleDeletedSchema,
  scheduleNameParam,
  schedulesSchema,
} from './schedules';
import { tokenBody } from './tokens';
import { workflowParam } from './usage';
import { approvalBody, signalBody, waitNameParam } from './waits';
import {
  addWebhookBody,
  deliveriesQuery,
  deliveriesSchema,
  deliveryAnswerSchema,
  deliveryIdParam,
  webhookActionBody,
  webhookActionParam,
  webhookAddedSchema,
  webhookAnswerSchema,
  webhookDeletedSchema,
  webhookIdParam,
  webhooksSchema,
} from './webhooks';

type Access = 'none' | 'viewer' | 'operator';

export interface Route {
  method: 'get' | 'post' | 'put' | 'delete';
  /** OpenAPI path template: `{id}` where the route folder is `[id]`. */
  path: string;
  summary: string;
  access: Access;
  params?: Record<string, z.ZodType>;
  query?: z.ZodType;
  body?: z.ZodType;
  /** The success status and its JSON schema; `text` for a non-JSON answer. */
  ok: { status: number; schema: z.ZodType | 'text' | 'document' };
  /** The refusals the route can answer besides auth's, 503 and 500, and a body's 415 (lib/api/body.ts). */
  refusals?: number[];
}

const runId = { runId: runRef };

export const ROUTES: Route[] = [
  {
    method: 'get',
    path: '/api/health',
    summary: 'Whether this server and its store answer: for load balancers (no auth).',
    access: 'none',
    ok: { status: 200, schema: healthSchema },
  },
  {
    method: 'get',
    path: '/api/metrics',
    summary: 'Prometheus metrics, read from the store at scrape time.',
    access: 'viewer',
    ok: { status: 200, schema: 'text' },
  },
  {
    method: 'get',
    path: '/api/v1/openapi.json',
    summary: 'This document.',
    access: 'viewer',
    ok: { status: 200, schema: 'document' },
  },
  {
    method: 'get',
    path: '/api/v1/runs',
    summary: "Runs newest first, outside clients' included.",
    access: 'viewer',
    query: listRunsQuery,
    ok: { status: 200, schema: runsPageSchema },
    refusals: [400],
  },
  {
    method: 'post',
    path: '/api/v1/runs',
    summary:
      'Start a run of a workflow a worker serves. An id that exists with the same workflow and parsed input is ' +
      'answered 200 with that run and existed: true, nothing written; with another workflow or input, 409 CONFLICT.',
    access: 'operator',
    body: startBody,
    ok: { status: 201, schema: startAnswerSchema },
    refusals: [400, 409, 413],
  },
  {
    method: 'post',
    path: '/api/v1/runs/bulk',
    summary:
      "One action (pause, resume, cancel, retry) over every run a filter matches (GET /api/v1/runs's filters), audited per run.",
    access: 'operator',
    body: bulkBody,
    ok: { status: 200, schema: bulkAnswerSchema },
    refusals: [400, 413],
  },
  {
    method: 'get',
    path: '/api/v1/runs/{id}',
    summary: 'A run, its progress, counts, live claims and the actions it allows.',
    access: 'viewer',
    params: { id: runRef },
    ok: { status: 200, schema: runDetailSchema },
    refusals: [400, 404],
  },
  {
    method: 'post',
    path: '/api/v1/runs/{id}/{action}',
    summary: "An operator's action on one run: pause, resume, cancel or retry.",
    access: 'operator',
    params: { id: runRef, action: actionParam },
    body: actionBody,
    ok: { status: 200, schema: runAnswerSchema },
    refusals: [400, 404, 409, 413],
  },
  {
    method: 'post',
    path: '/api/v1/runs/{id}/rerun',
    summary:
      'Run a completed, failed, cancelled or paused run again from a step; its results from there move to history.',
    access: 'operator',
    params: { id: runRef },
    body: rerunBody,
    ok: { status: 200, schema: rerunAnswerSchema },
    refusals: [400, 404, 409, 413],
  },
  {
    method: 'post',
    path: '/api/v1/runs/{id}/budget',
    summary: "Set a run's budget (USD): a run the gateway paused at its budget continues once raised and resumed.",
    access: 'operator',
    params: { id: runRef },
    body: budgetBody,
    ok: { status: 200, schema: runAnswerSchema },
    refusals: [400, 404, 413],
  },
  {
    method: 'post',
    path: '/api/v1/runs/{id}/fork',
    summary: "A new run with this run's steps before a step copied, the rest run anew; this run untouched.",
    access: 'operator',
    params: { id: runRef },
    body: forkBody,
    ok: { status: 201, schema: forkAnswerSchema },
    refusals: [400, 404, 409, 413],
  },
  {
    method: 'get',
    path: '/api/v1/runs/{id}/rewind-cost',
    summary:
      'What the steps a rerun or fork from a step would redo cost the last time they ran (a read: nothing written).',
    access: 'viewer',
    params: { id: runRef },
    query: rewindCostQuery,
    ok: { status: 200, schema: lastCostSchema },
    refusals: [400, 409],
  },
  {
    method: 'get',
    path: '/api/v1/runs/{id}/rerun-preview',
    summary:
      'What a rerun from a step would do: the last cost of the steps it redoes, and the child runs it would let go (a read).',
    access: 'viewer',
    params: { id: runRef },
    query: rewindCostQuery,
    ok: { status: 200, schema: rerunPreviewSchema },
    refusals: [400, 409],
  },
  {
    method: 'get',
    path: '/api/v1/runs/{id}/steps/{n}',
    summary: 'One step: key, every attempt, the result, and results a rerun replaced.',
    access: 'viewer',
    params: { id: runRef, n: stepParam },
    ok: { status: 200, schema: stepSchema },
    refusals: [400, 404],
  },
  {
    method: 'post',
    path: '/api/v1/runs/{id}/approvals/{name}',
    summary: "Approve or reject a run's waitForApproval (once: a second decision is 409).",
    access: 'operator',
    params: { id: runRef, name: waitNameParam },
    body: approvalBody,
    ok: { status: 200, schema: waitAnswerSchema },
    refusals: [400, 404, 409, 413],
  },
  {
    method: 'post',
    path: '/api/v1/runs/{id}/signals/{name}',
    summary: 'Send a run a signal; one sent before its waitForSignal is kept (once: a second is 409).',
    access: 'operator',
    params: { id: runRef, name: waitNameParam },
    body: signalBody,
    ok: { status: 200, schema: waitAnswerSchema },
    refusals: [400, 404, 409, 413],
  },
  {
    method: 'post',
    path: '/api/v1/runs/{id}/tokens',
    summary: 'Mint a token that may use the checkpoint protocol for this run only.',
    access: 'operator',
    params: { id: runRef },
    body: tokenBody,
    ok: { status: 201, schema: runTokenSchema },
    refusals: [400, 413],
  },
  {
    method: 'get',
    path: '/api/v1/runs/{id}/committed',
    summary: "A run's committed results in step order (a run token: its own run's).",
    access: 'viewer',
    params: { id: runRef },
    query: committedQuery,
    ok: { status: 200, schema: committedPageSchema },
    refusals: [400, 404],
  },
  {
    method: 'get',
    path: '/api/v1/runs/{id}/logs',
    summary: "The lines a command workflow's program printed, oldest first: the newest, or those after ?after=SEQ.",
    access: 'viewer',
    params: { id: runRef },
    query: logsQuery,
    ok: { status: 200, schema: runLogPageSchema },
    refusals: [400, 404],
  },
  {
    method: 'get',
    path: '/api/v1/runs/{id}/usage',
    summary: "A run's model calls through the gateway: tokens and cost in total, by step and by model.",
    access: 'viewer',
    params: { id: runRef },
    ok: { status: 200, schema: runUsageSchema },
    refusals: [400, 404],
  },
  {
    method: 'get',
    path: '/api/v1/workflows/{name}/usage',
    summary: "A workflow's model calls over all its runs: tokens and cost in total and by model.",
    access: 'viewer',
    params: { name: workflowParam },
    ok: { status: 200, schema: workflowUsageSchema },
    refusals: [400, 404],
  },
  {
    method: 'get',
    path: '/api/v1/claims',
    summary: 'Claims in flight, oldest first; orphaned ones marked.',
    access: 'viewer',
    query: listClaimsQuery,
    ok: { status: 200, schema: claimsPageSchema },
    refusals: [400],
  },
  {
    method: 'post',
    path: '/api/v1/claims/expire',
    summary: 'Give up on a claim: its step runs again.',
    access: 'operator',
    body: expireBody,
    ok: { status: 200, schema: expiredSchema },
    refusals: [400, 404, 409, 413],
  },
  {
    method: 'post',
    path: '/api/v1/claims/resolve',
    summary: 'Commit a result by hand for a claim whose side effect is in doubt.',
    access: 'operator',
    body: resolveBody,
    ok: { status: 200, schema: resolvedSchema },
    refusals: [400, 404, 409, 413],
  },
  {
    method: 'post',
    path: '/api/v1/claims/sweep',
    summary: 'Expire every orphaned claim (of one run, when given).',
    access: 'operator',
    body: sweepBody,
    ok: { status: 200, schema: sweptSchema },
    refusals: [400, 413],
  },
  {
    method: 'post',
    path: '/api/v1/events',
    summary:
      'Send an event under its id: each subscribed workflow starts one run, and runs waiting for it with a fitting match wake. 201 the first time; a re-send is 200 with recorded: false and changes nothing.',
    access: 'operator',
    body: emitBody,
    ok: { status: 201, schema: emittedSchema },
    refusals: [400, 409, 413],
  },
  {
    method: 'get',
    path: '/api/v1/schedules',
    summary: 'Every schedule, with its next fire time and its last runs.',
    access: 'viewer',
    ok: { status: 200, schema: schedulesSchema },
  },
  {
    method: 'post',
    path: '/api/v1/schedules',
    summary: 'Add a schedule: a workflow started on a cron expression in a time zone, one run per tick.',
    access: 'operator',
    body: addScheduleBody,
    ok: { status: 201, schema: scheduleAnswerSchema },
    refusals: [400, 404, 409, 413],
  },
  {
    method: 'post',
    path: '/api/v1/schedules/{name}/{action}',
    summary: 'Pause a schedule, or resume it from the next tick after now (409: it is paused already, or not paused).',
    access: 'operator',
    params: { name: scheduleNameParam, action: scheduleActionParam },
    body: scheduleActionBody,
    ok: { status: 200, schema: scheduleAnswerSchema },
    refusals: [400, 404, 409, 413],
  },
  {
    method: 'delete',
    path: '/api/v1/schedules/{name}',
    summary: 'Delete a schedule; the runs it started stay.',
    access: 'operator',
    params: { name: scheduleNameParam },
    body: scheduleActionBody,
    ok: { status: 200, schema: scheduleDeletedSchema },
    refusals: [400, 404, 413],
  },
  {
    method: 'get',
    path: '/api/v1/webhooks',
    summary: 'Every alert webhook, oldest first; each secret as its last four characters.',
    access: 'viewer',
    ok: { status: 200, schema: webhooksSchema },
  },
  {
    method: 'post',
    path: '/api/v1/webhooks',
    summary:
      'Subscribe a URL to events (run.failed, run.completed, run.stalled, run.waiting_approval, run.budget_reached, claim.in_doubt); the answer holds its signing secret, shown this once.',
    access: 'operator',
    body: addWebhookBody,
    ok: { status: 201, schema: webhookAddedSchema },
    refusals: [400, 413],
  },
  {
    method: 'post',
    path: '/api/v1/webhooks/{id}/{action}',
    summary:
      'Pause an alert webhook (no new events for it; its pending deliveries wait), or resume it (409: it is paused already, or not paused).',
    access: 'operator',
    params: { id: webhookIdParam, action: webhookActionParam },
    body: webhookActionBody,
    ok: { status: 200, schema: webhookAnswerSchema },
    refusals: [400, 404, 409, 413],
  },
  {
    method: 'delete',
    path: '/api/v1/webhooks/{id}',
    summary: 'Delete an alert webhook and its deliveries.',
    access: 'operator',
    params: { id: webhookIdParam },
    body: webhookActionBody,
    ok: { status: 200, schema: webhookDeletedSchema },
    refusals: [400, 404, 413],
  },
  {
    method: 'get',
    path: '/api/v1/webhooks/deliveries',
    summary: "The alert webhooks' deliveries, newest first, with their attempts and last errors.",
    access: 'viewer',
    query: deliveriesQuery,
    ok: { status: 200, schema: deliveriesSchema },
    refusals: [400],
  },
  {
    method: 'post',
    path: '/api/v1/webhooks/deliveries/{id}/resend',
    summary: 'Send a delivery again under its same id: due now, its attempts counted afresh.',
    access: 'operator',
    params: { id: deliveryIdParam },
    body: webhookActionBody,
    ok: { status: 200, schema: deliveryAnswerSchema },
    refusals: [400, 404, 413],
  },
  {
    method: 'get',
    path: '/api/v1/audit',
    summary: "The operators' log, newest first: the dashboard's, the API's and the CLI's actions.",
    access: 'viewer',
    query: auditQuery,
    ok: { status: 200, schema: auditPageSchema },
    refusals: [400],
  },
  {
    method: 'get',
    path: '/api/v1/checkpoint/{runId}/progress',
    summary: "The run's map; 404: start at step 0.",
    access: 'viewer',
    params: runId,
    ok: { status: 200, schema: progressSchema },
    refusals: [400, 404],
  },
  {
    method: 'put',
    path: '/api/v1/checkpoint/{runId}/progress',
    summary: "Save the run's map (and skip/await counts).",
    access: 'operator',
    params: runId,
    body: progressBody,
    ok: { status: 200, schema: savedSchema },
    refusals: [400, 413],
  },
  {
    method: 'post',
    path: '/api/v1/checkpoint/{runId}/begin',
    summary: "Declare the client's run (workflow, total): listed by name, pausable.",
    access: 'operator',
    params: runId,
    body: beginBody,
    ok: { status: 200, schema: beginAnswerSchema },
    refusals: [400, 409, 413],
  },
  {
    method: 'post',
    path: '/api/v1/checkpoint/{runId}/end',
    summary: 'A declared run ended: completed, failed or stopped.',
    access: 'operator',
    params: runId,
    body: endBody,
    ok: { status: 200, schema: endAnswerSchema },
    refusals: [400, 404, 413],
  },
  {
    method: 'post',
    path: '/api/v1/checkpoint/claim',
    summary: 'Phase 1: claim a key, or learn it is committed or held.',
    access: 'operator',
    body: claimBody,
    ok: { status: 200, schema: claimAnswerSchema },
    refusals: [400, 413, 422],
  },
  {
    method: 'post',
    path: '/api/v1/checkpoint/renew',
    summary: "Extend a claim's lease while its side effect runs.",
    access: 'operator',
    body: renewBody,
    ok: { status: 200, schema: renewAnswerSchema },
    refusals: [400, 409, 413],
  },
  {
    method: 'post',
    path: '/api/v1/checkpoint/commit',
    summary: 'Phase 3: the result, committed mark and progress in one transaction.',
    access: 'operator',
    body: commitBody,
    ok: { status: 200, schema: commitAnswerSchema },
    refusals: [400, 409, 413, 422],
  },
  {
    method: 'post',
    path: '/api/v1/checkpoint/release',
    summary: 'The side effect failed: give the key back.',
    access: 'operator',
    body: releaseBody,
    ok: { status: 200, schema: releaseAnswerSchema },
    refusals: [400, 409, 413],
  },
  {
    method: 'post',
    path: '/api/v1/checkpoint/stream',
    summary: "Append text to the transcript of the step a claim is for, shown on the step's page.",
    access: 'operator',
    body: streamBody,
    ok: { status: 200, schema: streamAnswerSchema },
    refusals: [400, 409, 413],
  },
  {
    method: 'post',
    path: '/api/v1/checkpoint/usage',
    summary: "Record a model call made without the gateway in the run's usage ledger, for the step a claim is for.",
    access: 'operator',
    body: usageBody,
    ok: { status: 200, schema: usageAnswerSchema },
    refusals: [400, 409, 413, 422],
  },
];

const STATUS_TEXT: Record<number, string> = {
  400: 'INVALID_INPUT or INVALID_JSON: `fields` names each wrong field',
  401: 'UNAUTHENTICATED: no token, or not one of ours',
  403: 'FORBIDDEN: the role may not do this, or a cross-site write',
  404: 'NOT_FOUND',
  409: 'CONFLICT, INVALID_TRANSITION or LEASE_LOST',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE: a body sent with a Content-Type that is not JSON (none at all is read as JSON)',
  422: 'IDEMPOTENCY_KEY_REUSE',
  500: 'INTERNAL: a bug; the server log has the rest',
  503: 'STORE_UNAVAILABLE: retry after Retry-After seconds',
};

/** A zod schema as the JSON Schema of one place in the document (no $schema of its own). */
function schemaOf(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const { $schema: _, ...rest } = z.toJSONSchema(schema, {
    target: 'draft-2020-12',
    io,
    unrepresentable: 'any',
  }) as Record<string, unknown>;
  return rest;
}

function parameters(route: Route): unknown[] {
  const out: unknown[] = [];
  for (const [name, schema] of Object.entries(route.params ?? {})) {
    out.push({ name, in: 'path', required: true, schema: schemaOf(schema, 'input') });
  }
  if (route.query) {
    const query = schemaOf(route.query, 'input') as { properties?: Record<string, unknown>; required?: string[] };
    for (const [name, schema] of Object.entries(query.properties ?? {})) {
      out.push({ name, in: 'query', required: query.required?.includes(name) ?? false, schema });
    }
  }
  return out;
}

function operation(route: Route): Record<string, unknown> {
  const json = (schema: unknown) => ({ 'application/json': { schema } });
  const error = { $ref: '#/components/schemas/Error' };
  const ok =
    route.ok.schema === 'text'
      ? { 'text/plain': { schema: { type: 'string' } } }
      : route.ok.schema === 'document'
        ? json({ type: 'object', description: 'an OpenAPI 3.1 document' })
        : json(schemaOf(route.ok.schema, 'output'));
  const responses: Record<string, unknown> = { [route.ok.status]: { description: 'success', content: ok } };
  const refusals = [
    ...(route.refusals ?? []),
    // Every body is read by lib/api/body.ts, which refuses one sent as anything but JSON.
    ...(route.body ? [415] : []),
    ...(route.access === 'none' ? [] : [401, 403]),
    500,
    503,
  ];
  for (const status of [...new Set(refusals)].sort()) {
    responses[status] = { description: STATUS_TEXT[status] ?? 'refused', content: json(error) };
  }
  const body = route.body && schemaOf(route.body, 'input');
  return {
    operationId: operationId(route),
    summary: route.summary,
    security: route.access === 'none' ? [] : [{ bearer: [] }, { session: [] }],
    'x-waybill-role': route.access,
    ...(route.params || route.query ? { parameters: parameters(route) } : {}),
    ...(body ? { requestBody: { required: !route.body!.safeParse(undefined).success, content: json(body) } } : {}),
    responses,
  };
}

/** getRuns, postCheckpointClaim, getRunsIdCommitted: from the method and the path, stable for generators. */
function operationId(route: Route): string {
  const words = route.path
    .replace(/^\/api(\/v1)?\//, '')
    .split(/[/.{}-]+/)
    .filter(Boolean);
  return route.method + words.map((w) => w[0]!.toUpperCase() + w.slice(1)).join('');
}

let built: Record<string, unknown> | undefined;

export function openApiDocument(): Record<string, unknown> {
  if (built) return built;
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of ROUTES) (paths[route.path] ??= {})[route.method] = operation(route);
  built = {
    openapi: '3.1.0',
    info: {
      title: 'Waybill',
      version: '1',
      description:
        'Durable checkpoints and exactly-once side effects for long-running agent runs: the control plane and the ' +
        'checkpoint protocol. Times are epoch seconds. Bodies are JSON in UTF-8, sent as application/json, ' +
        'application/<name>+json or with no Content-Type (any other is 415). Errors are { error: { code, message, ' +
        'fields? } }: branch on code.',
    },
    servers: [{ url: '/' }],
    paths,
    components: {
      schemas: { Error: schemaOf(errorSchema, 'output') },
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description:
            'WAYBILL_VIEWER_TOKEN for reads, WAYBILL_OPERATOR_TOKEN for writes; a run token (POST /api/v1/runs/{id}/tokens) ' +
            'for the checkpoint protocol of its one run, and nothing else',
        },
        session: {
          type: 'apiKey',
          in: 'cookie',
          name: 'waybill_session',
          description: "the dashboard's session, after /login",
        },
      },
    },
  };
  return built;
}
