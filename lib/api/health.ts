/**
 * What a load balancer or an orchestrator asks: does this server answer, and does its store? One primary-key
 * read, bounded in time: a store that hangs is as down as one that refuses, and a health check that hangs
 * makes the balancer's own timeout decide.
 */
import type { Store } from '../store/contract';

const PROBE_MS = 2000;

export async function health(
  open: () => Promise<Store>,
): Promise<{ status: 200 | 503; body: { ok: boolean; store: 'up' | 'down' } }> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(resolve, PROBE_MS, false);
  });
  const probe = open()
    .then((store) => store.loadProgress('waybill:health'))
    .then(
      () => true,
      () => false,
    );
  const up = await Promise.race([probe, timeout]);
  clearTimeout(timer);
  return up ? { status: 200, body: { ok: true, store: 'up' } } : { status: 503, body: { ok: false, store: 'down' } };
}
