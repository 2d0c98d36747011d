/** One status line on stderr, rewritten in place on a terminal, throttled elsewhere. */
export type Progress = { update: (line: string) => void; done: (line: string) => void };

export const createProgress = (): Progress => {
  const isTty = process.stderr.isTTY;
  let last = 0;
  return {
    update(line) {
      const now = Date.now();
      if (isTty) process.stderr.write(`\r\x1b[2K${line}`);
      else if (now - last > 2000) process.stderr.write(`${line}\n`);
      else return;
      last = now;
    },
    done(line) {
      process.stderr.write(isTty ? `\r\x1b[2K${line}\n` : `${line}\n`);
    },
  };
};
