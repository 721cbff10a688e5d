'use client';
/**
 * The claims page's shared client state: the one status line every claim action reports into, which claim's
 * resolve form is open (one at a time, so its fields stay unique on the page), and the size a result may have.
 * It lives above the table because a resolved or expired claim's row disappears with the refresh that follows
 * the action.
 */
import { createContext, type ReactNode, useCallback, useContext, useMemo, useState } from 'react';

export interface ClaimNotice {
  ok: boolean;
  text: string;
}

interface Board {
  notice: ClaimNotice | null;
  say: (result: { ok: boolean; message: string }) => void;
  openResolve: string | null;
  setOpenResolve: (key: string | null) => void;
  /** WAYBILL_MAX_BODY_BYTES: a resolve form refuses a result past it itself (app/components/json-limit.ts). */
  maxResultBytes: number;
}

const BoardContext = createContext<Board | null>(null);

export function ClaimBoard({ children, maxResultBytes }: { children: ReactNode; maxResultBytes: number }) {
  const [notice, setNotice] = useState<ClaimNotice | null>(null);
  const [openResolve, setOpenResolve] = useState<string | null>(null);
  const say = useCallback(
    (result: { ok: boolean; message: string }) => setNotice({ ok: result.ok, text: result.message }),
    [],
  );
  const value = useMemo(
    () => ({ notice, say, openResolve, setOpenResolve, maxResultBytes }),
    [notice, say, openResolve, maxResultBytes],
  );
  return <BoardContext.Provider value={value}>{children}</BoardContext.Provider>;
}

export function useClaimBoard(): Board {
  const board = useContext(BoardContext);
  if (!board) throw new Error('useClaimBoard outside <ClaimBoard>');
  return board;
}

/** Always in the page, so screen readers announce each new message as it replaces the last. */
export function ClaimMessage() {
  const { notice } = useClaimBoard();
  return (
    <div
      data-testid="claim-message"
      role="status"
      aria-live="polite"
      className={
        notice
          ? `rounded-md px-3 py-2 text-sm ring-1 ring-inset ${
              notice.ok
                ? 'bg-emerald-50 text-emerald-800 ring-emerald-200 dark:bg-emerald-950 dark:text-emerald-200 dark:ring-emerald-900'
                : 'bg-red-50 text-red-800 ring-red-200 dark:bg-red-950 dark:text-red-200 dark:ring-red-900'
            }`
          : 'sr-only'
      }
    >
      {notice?.text}
    </div>
  );
}
