// `bun load.ts URL N CONCURRENCY`: N streamed chat requests, CONCURRENCY at a time.
const [url, total = "1000", concurrency = "64"] = Bun.argv.slice(2);
const body = JSON.stringify({ model: "m", stream: true, max_tokens: 50, messages: [{ role: "user", content: "hello" }] });
let started = 0;
let ok = 0;
const t0 = performance.now();
await Promise.all(
  Array.from({ length: Number(concurrency) }, async () => {
    while (started < Number(total)) {
      started++;
      const res = await fetch(`${url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body });
      await res.arrayBuffer();
      if (res.status === 200) ok++;
    }
  }),
);
console.log(`load: ${ok}/${total} answered 200 in ${Math.round(performance.now() - t0)} ms`);
