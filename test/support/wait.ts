/**
 * The one way tests wait for something that settles on its own (counts after a response, etcd
 * keys, discovery state): poll `check` on the event loop until it holds; past the deadline,
 * fail naming `what`.
 */
export async function eventually(check: () => boolean | Promise<boolean>, timeoutMs = 2000, what = "condition"): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`Not met within ${timeoutMs} ms: ${what}`);
    await Bun.sleep(5);
  }
}
