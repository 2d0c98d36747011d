/** Runs once when the server starts (Node.js runtime only; see server/boot.ts). */
export async function register(): Promise<void> {
  if (process.env.NEXT_RUNTIME === "nodejs") {
    const { boot } = await import("./server/boot");
    boot();
  }
}
