"use client";
import type { TJobProgress } from "@porter/contracts/job";
import { useRouter } from "next/navigation";
import { createContext, type ReactNode, useContext, useEffect, useRef, useState, useTransition } from "react";
import { ProgressBar, StateBadge } from "./ui";

// Live updates of the tenant status pages (issue 13): one EventSource on
// /status/<tenant_id>/events[?job_id=] (events `job.<state>` and `job.progress`, data as
// ZStreamEventData). A progress event updates that job's bar in place; a state event updates its
// badge and asks the server for a fresh render (router.refresh(), debounced) so counts and lists
// follow. If the stream fails (closed, or three errors in a row) the page falls back to a refresh
// every 10 s. No tRPC, no react-query, no zod here: the page's JavaScript stays small, and the
// server's render is the source of truth (an event only decorates it until the next render).

const EVENT_NAMES = ["ready", "running", "retry_wait", "succeeded", "dead", "cancelled", "expired", "progress"].map((s) => `job.${s}`);
const REFRESH_DEBOUNCE_MS = 500;
const POLL_MS = 10_000;

type Live = { status: string; progress: TJobProgress | null };
type Listener = (live: Live) => void;
type Bus = { subscribe: (jobId: string, listener: Listener) => () => void };
const LiveBus = createContext<Bus | null>(null);

/** Opens the stream for the page (or one job) and feeds the page's LiveJob cells. */
export function StatusLive({ tenantId, jobId, children }: { tenantId: string; jobId?: string; children: ReactNode }) {
  const router = useRouter();
  const listeners = useRef(new Map<string, Set<Listener>>());
  const [mode, setMode] = useState<"connecting" | "live" | "polling">("connecting");
  // The loading state of a refresh: the current render stays until the new one arrives.
  const [isRefreshing, startRefresh] = useTransition();
  const bus = useRef<Bus>({
    subscribe: (id, listener) => {
      const set = listeners.current.get(id) ?? new Set();
      set.add(listener);
      listeners.current.set(id, set);
      return () => set.delete(listener);
    },
  });

  useEffect(() => {
    let refreshTimer: ReturnType<typeof setTimeout> | undefined;
    let poll: ReturnType<typeof setInterval> | undefined;
    let errors = 0;
    const refresh = () => {
      clearTimeout(refreshTimer);
      refreshTimer = setTimeout(() => startRefresh(() => router.refresh()), REFRESH_DEBOUNCE_MS);
    };
    const source = new EventSource(`/status/${encodeURIComponent(tenantId)}/events${jobId ? `?job_id=${encodeURIComponent(jobId)}` : ""}`);
    const fallBack = () => {
      source.close();
      setMode("polling");
      poll ??= setInterval(() => startRefresh(() => router.refresh()), POLL_MS);
    };
    const onEvent = (e: MessageEvent<string>) => {
      errors = 0;
      let data: { job_id?: unknown; status?: unknown; progress?: unknown } | null = null;
      try {
        data = JSON.parse(e.data);
      } catch {
        return;
      }
      if (!data || typeof data.job_id !== "string" || typeof data.status !== "string") return;
      const live: Live = { status: data.status, progress: (data.progress as TJobProgress | null) ?? null };
      for (const listener of listeners.current.get(data.job_id) ?? []) listener(live);
      if (e.type !== "job.progress") refresh();
    };
    for (const name of EVENT_NAMES) source.addEventListener(name, onEvent as EventListener);
    source.onopen = () => {
      errors = 0;
      setMode("live");
    };
    source.onerror = () => {
      // CLOSED: the server refused the stream (no retry will follow); else the browser retries.
      if (source.readyState === EventSource.CLOSED || ++errors >= 3) fallBack();
    };
    return () => {
      source.close();
      clearTimeout(refreshTimer);
      clearInterval(poll);
    };
  }, [tenantId, jobId, router]);

  return (
    <LiveBus.Provider value={bus.current}>
      <p className="st-live" data-live-mode={mode} aria-live="polite" aria-busy={isRefreshing}>
        {mode === "live" ? "Live" : mode === "polling" ? "Updating every 10 s" : "Connecting…"}
        {isRefreshing ? " · updating…" : ""}
      </p>
      {children}
    </LiveBus.Provider>
  );
}

/** A job's state badge and (while running) progress bar, updated in place by the stream. */
export function LiveJob({ jobId, state, progress, part }: { jobId: string; state: string; progress: TJobProgress | null; part: "state" | "progress" }) {
  const bus = useContext(LiveBus);
  const [live, setLive] = useState<Live | null>(null);
  const progressKey = JSON.stringify(progress);
  // A new server render is newer than what the stream said before it.
  // biome-ignore lint/correctness/useExhaustiveDependencies: reset when the server's values change
  useEffect(() => setLive(null), [state, progressKey]);
  useEffect(() => bus?.subscribe(jobId, setLive), [bus, jobId]);
  const shown = live ?? { status: state, progress };
  if (part === "state") return <StateBadge state={shown.status} />;
  return shown.status === "RUNNING" ? <ProgressBar progress={shown.progress} /> : null;
}
