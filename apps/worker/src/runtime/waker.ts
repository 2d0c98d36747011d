/**
 * A level-triggered wake-up for a loop: `wake()` ends the current `wait()` at once, or the next
 * one if nobody is waiting. `wait` resolves `true` when woken, `false` when its timeout passed.
 */
export class Waker {
  private waiter: (() => void) | undefined;
  private isPending = false;

  wake(): void {
    if (this.waiter) {
      const waiter = this.waiter;
      this.waiter = undefined;
      waiter();
    } else {
      this.isPending = true;
    }
  }

  wait(timeoutMs: number): Promise<boolean> {
    if (this.isPending) {
      this.isPending = false;
      return Promise.resolve(true);
    }
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiter = undefined;
        resolve(false);
      }, timeoutMs);
      this.waiter = () => {
        clearTimeout(timer);
        resolve(true);
      };
    });
  }
}

/** Resolves after `ms` milliseconds. */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** `base` ± `spread` (a fraction), so many workers do not poll in lockstep. */
export const jitter = (base: number, spread = 0.25): number => Math.round(base * (1 - spread + Math.random() * 2 * spread));
