'use client';
/**
 * What the step page's 404 says: its layout reads the run (a 404 boundary gets no params), and this hands
 * that to not-found.tsx, so a missing step is told apart from a missing run and from a step that is no number.
 */
import { createContext, type ReactNode, useContext } from 'react';
import type { StepAddress } from './address';

export interface StepMissing extends StepAddress {
  /** Whether the run has a row, progress or a claim; its step count when known. */
  runExists: boolean;
  totalSteps: number | null;
}

const Context = createContext<StepMissing | null>(null);

export function StepMissingProvider({ value, children }: { value: StepMissing | null; children: ReactNode }) {
  return <Context value={value}>{children}</Context>;
}

export const useStepMissing = () => useContext(Context);
