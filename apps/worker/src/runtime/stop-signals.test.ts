import { describe, expect, it } from "vitest";
import { createStopSignals, REPEATED_SIGNAL_WINDOW_MS } from "./stop-signals";

describe("stop signals", () => {
  it("the first signal drains; repeats within the window are the same stop; a later one forces", () => {
    let now = 10_000;
    const classify = createStopSignals(REPEATED_SIGNAL_WINDOW_MS, () => now);
    expect(classify()).toBe("drain");
    now += 2; // the process group's copy and npm's relay, milliseconds apart
    expect(classify()).toBe("repeat");
    now += REPEATED_SIGNAL_WINDOW_MS - 3;
    expect(classify()).toBe("repeat");
    now += 1;
    expect(classify()).toBe("force");
    now += 5_000;
    expect(classify()).toBe("force");
  });
});
