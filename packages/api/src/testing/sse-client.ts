/** One parsed SSE message as a test reads it. */
export type SseMessage = { id?: string; event: string; data: string };

/**
 * A test's SSE connection: `fetch` with the given headers, the body parsed as it arrives into
 * `messages` (comments counted in `comments`), `until(n | predicate)` to wait for messages, `close()`
 * to drop the connection (the socket goes).
 */
export const openSse = async (url: string, headers: Record<string, string> = {}) => {
  const abort = new AbortController();
  const res = await fetch(url, { headers, signal: abort.signal });
  const messages: SseMessage[] = [];
  const state = { comments: 0, ended: false, retry: null as number | null };
  const waiters = new Set<() => void>();
  const notify = () => {
    for (const w of waiters) w();
  };
  if (res.ok && res.body) {
    void (async () => {
      const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          buffer += value;
          let end = buffer.indexOf("\n\n");
          while (end >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const msg: SseMessage = { event: "message", data: "" };
            let hasData = false;
            for (const line of block.split("\n")) {
              if (line.startsWith(":")) state.comments++;
              else if (line.startsWith("id: ")) msg.id = line.slice(4);
              else if (line.startsWith("event: ")) msg.event = line.slice(7);
              else if (line.startsWith("data: ")) {
                msg.data += line.slice(6);
                hasData = true;
              } else if (line.startsWith("retry: ")) state.retry = Number(line.slice(7));
            }
            if (hasData) messages.push(msg);
            end = buffer.indexOf("\n\n");
          }
          notify();
        }
      } catch {}
      state.ended = true;
      notify();
    })();
  }
  const until = (want: number | ((m: SseMessage[]) => boolean), timeoutMs = 10_000): Promise<SseMessage[]> =>
    new Promise((resolve, reject) => {
      const check = () => {
        const ok = typeof want === "number" ? messages.length >= want : want(messages);
        if (ok) {
          waiters.delete(check);
          clearTimeout(timer);
          resolve(messages);
        }
      };
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(new Error(`timed out waiting for SSE messages; have ${JSON.stringify(messages.map((m) => m.event))}`));
      }, timeoutMs);
      waiters.add(check);
      check();
    });
  const ended = (timeoutMs = 10_000) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (state.ended) {
          waiters.delete(check);
          clearTimeout(timer);
          resolve();
        }
      };
      const timer = setTimeout(() => reject(new Error("stream did not end")), timeoutMs);
      waiters.add(check);
      check();
    });
  return { res, messages, state, until, ended, close: () => abort.abort() };
};
