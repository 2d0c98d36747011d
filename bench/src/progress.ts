/** One status line on stderr, rewritten in place on a terminal, throttled elsewhere; `done` lines carry the elapsed time. */
export type Progress = { update: (line: string) => void; done: (line: string) => void };

export const createProgress = (): Progress => {
  const isTty = process.stderr.isTTY;
  const started = Date.now();
  let last = 0;
  const stamp = () => {
    const s = Math.floor((Date.now() - started) / 1000);
    return `[${String(Math.floor(s / 60)).padStart(2, "0")}:${String(s % 60).padStart(2, "0")}]`;
  };
  return {
    update(line) {
      const now = Date.now();
      if (isTty) process.stderr.write(`\r\x1b[2K${stamp()} ${line}`);
      else if (now - last > 2000) process.stderr.write(`${stamp()} ${line}\n`);
      else return;
      last = now;
    },
    done(line) {
      process.stderr.write(isTty ? `\r\x1b[2K${stamp()} ${line}\n` : `${stamp()} ${line}\n`);
    },
  };
};
