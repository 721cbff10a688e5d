'use client';
/**
 * Moves every lease countdown on the page (ClaimCountdown's spans) once a second by the browser's clock: one
 * timer and no per-row component. It writes the text node React rendered, so a live refresh that brings new
 * server text still finds its node and replaces it.
 */
import { useEffect } from 'react';
import { LEASE_TONES, leaseState } from './lease-text';

function tick() {
  const now = Date.now() / 1000;
  for (const el of document.querySelectorAll<HTMLElement>('[data-lease-expires]')) {
    const { text, tone } = leaseState(Number(el.dataset.leaseExpires), now, el.dataset.orphaned !== undefined);
    const node = el.firstChild;
    if (node?.nodeType === Node.TEXT_NODE) {
      if (node.nodeValue !== text) node.nodeValue = text;
    } else {
      el.textContent = text;
    }
    for (const t of LEASE_TONES) el.classList.toggle(t, t === tone);
  }
}

export function CountdownTicker() {
  useEffect(() => {
    tick();
    const timer = setInterval(tick, 1000);
    return () => clearInterval(timer);
  }, []);
  return null;
}
