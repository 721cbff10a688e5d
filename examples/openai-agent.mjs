// An agent loop whose steps are model calls through the official openai package (npm install openai).
// Each call carries its step's idempotency key as the Idempotency-Key header, so a gateway that deduplicates
// on it answers the one step a crash leaves in doubt (called, not committed) without running the model again.
//   OPENAI_BASE_URL=http://127.0.0.1:8080/v1 OPENAI_API_KEY=… node openai-agent.mjs
//   (any OpenAI-compatible endpoint; DATABASE_URL, RUN_ID and MODEL as in loop.mjs)
import { hostname } from 'node:os';
import OpenAI from 'openai';
import { Checkpoint, openStore, runAgent } from 'waybill';

const openai = new OpenAI(); // reads OPENAI_API_KEY and OPENAI_BASE_URL
const store = await openStore(process.env.DATABASE_URL ?? 'file:./data/waybill.db');
const checkpoint = new Checkpoint(store, process.env.RUN_ID ?? 'openai-1', {
  workerId: `openai-agent-${hostname()}`,
  workflow: 'openai-summaries',
});
const documents = Array.from({ length: Number(process.env.DOCUMENTS ?? 6) }, (_, i) => `document ${i}`);

const report = await runAgent(documents, checkpoint, async (document, { idempotencyKey, signal, attempt }) => {
  // attempt > 1: the previous holder died mid-call, so the model may have answered it already.
  if (attempt > 1) console.log(`in doubt: ${idempotencyKey} (attempt ${attempt})`);
  const completion = await openai.chat.completions.create(
    { model: process.env.MODEL ?? 'gpt-4o-mini', messages: [{ role: 'user', content: `Summarize ${document}.` }] },
    // The SDK's own idempotencyKey option is sent only by clients that declare a header for it, and OpenAI's
    // does not: the header is given here. Its retries resend these headers, so they carry the same key.
    { headers: { 'Idempotency-Key': idempotencyKey }, signal },
  );
  return { summary: completion.choices[0]?.message.content ?? '' };
});
console.log(JSON.stringify(report));
await store.close();
