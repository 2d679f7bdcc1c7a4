import { createHash } from "node:crypto";
import script from "./browser/dashboard.js" with { type: "text" };

const STYLE = `
:root{--bg:#f6f7f9;--fg:#1c2330;--mute:#6a7485;--card:#fff;--line:#e2e6ec;--good:#1a7f37;--bad:#c62828;--warn:#b26a00;
--ok:#2f81f7;--worker_error:#d1242f;--client_disconnected:#8a63d2;--timeout:#e07b00;--rejected:#7d8590;--internal_error:#000}
@media (prefers-color-scheme:dark){:root{--bg:#0f1318;--fg:#e4e8ee;--mute:#8b95a5;--card:#171c23;--line:#2a313b;--internal_error:#fff}}
*{box-sizing:border-box}
body{margin:0;font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:var(--bg);color:var(--fg)}
header{display:flex;flex-wrap:wrap;gap:.5rem 1rem;align-items:center;padding:.75rem 1rem;border-bottom:1px solid var(--line);background:var(--card)}
header h1{font-size:1.1rem;margin:0}
header .meta{color:var(--mute)}
main{padding:1rem;display:grid;gap:1rem;max-width:1400px;margin:0 auto}
section{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:.75rem 1rem;min-width:0}
h2{font-size:.95rem;margin:0 0 .5rem}
.figures{display:grid;grid-template-columns:repeat(auto-fit,minmax(110px,1fr));gap:.5rem}
.figure{display:flex;flex-direction:column;padding:.25rem 0}
.figure b{font-size:1.4rem;font-variant-numeric:tabular-nums}
.figure span,.note,.scale{color:var(--mute);font-size:.8rem}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(280px,1fr));gap:1rem}
.chart h2{display:flex;justify-content:space-between;gap:.5rem}
svg{display:block;width:100%;height:140px;background:linear-gradient(var(--line) 1px,transparent 1px) 0 0/100% 25%;border-bottom:1px solid var(--line)}
.line{fill:none;stroke-width:1.5}
.legend{display:flex;flex-wrap:wrap;gap:.25rem .75rem;font-size:.8rem;color:var(--mute);margin-top:.25rem}
.legend i{display:inline-block;width:.8rem;height:.2rem;margin-right:.3rem;vertical-align:middle;background:currentColor}
.scroll{overflow-x:auto}
table{border-collapse:collapse;width:100%;font-variant-numeric:tabular-nums}
th,td{text-align:left;padding:.3rem .5rem;border-bottom:1px solid var(--line);white-space:nowrap}
th{color:var(--mute);font-weight:600;font-size:.8rem}
td.num,th.num{text-align:right}
td.url{font-family:ui-monospace,monospace;font-size:.85em}
td.msg{white-space:normal;min-width:14rem;max-width:40rem}
td.empty{color:var(--mute);text-align:center}
.badge,.state{font-weight:600}
.good,.s-healthy{color:var(--good)}
.bad,.s-unhealthy,.s-ejected{color:var(--bad)}
.s-failing,.s-joining,.s-starting,.s-unchecked{color:var(--warn)}
.o-ok{color:var(--ok);stroke:var(--ok)}.o-worker_error{color:var(--worker_error);stroke:var(--worker_error)}
.o-client_disconnected{color:var(--client_disconnected);stroke:var(--client_disconnected)}.o-timeout{color:var(--timeout);stroke:var(--timeout)}
.o-rejected{color:var(--rejected);stroke:var(--rejected)}.o-internal_error{color:var(--internal_error);stroke:var(--internal_error)}
.inflight{color:var(--ok);stroke:var(--ok)}.p50{color:var(--good);stroke:var(--good)}.p99{color:var(--timeout);stroke:var(--timeout)}
.live{margin-left:auto;font-size:.8rem}
@media (max-width:600px){main{padding:.5rem;gap:.5rem}section{padding:.5rem}.figure b{font-size:1.15rem}}
`;

const OUTCOME_LEGEND = ["ok", "worker_error", "client_disconnected", "timeout", "rejected", "internal_error"]
  .map((outcome) => `<span class="o-${outcome}"><i></i>${outcome}</span>`)
  .join("");

const BODY = `<header><h1>disagg-proxy</h1><span class="meta" id="version"></span><span class="meta">up <span id="uptime">–</span></span><span class="meta">pid <span id="pid">–</span>, started <span id="started">–</span></span>
<span class="badge" id="draining"></span><span class="live" id="live">connecting…</span></header>
<main>
<section><h2>Proxy</h2><div class="figures" id="figures"></div><p class="note">workers: <span id="discovery">–</span></p></section>
<div class="charts">
<section class="chart"><h2>Requests/s by outcome <span class="scale"></span></h2><svg id="chart-outcomes" viewBox="0 0 600 150" preserveAspectRatio="none" role="img" aria-label="Requests per second by outcome, last 15 minutes"></svg><div class="legend">${OUTCOME_LEGEND}</div></section>
<section class="chart"><h2>In flight <span class="scale"></span></h2><svg id="chart-inflight" viewBox="0 0 600 150" preserveAspectRatio="none" role="img" aria-label="Requests in flight, last 15 minutes"></svg><div class="legend"><span class="inflight"><i></i>requests in flight</span></div></section>
<section class="chart"><h2>Time to first token <span class="scale"></span></h2><svg id="chart-ttft" viewBox="0 0 600 150" preserveAspectRatio="none" role="img" aria-label="Time to first token p50 and p99, last 15 minutes"></svg><div class="legend"><span class="p50"><i></i>p50</span><span class="p99"><i></i>p99</span></div></section>
</div>
<section><h2>Workers</h2><div class="scroll"><table><thead><tr><th>role</th><th>worker</th><th>version</th><th>health</th><th>last check</th><th class="num">in flight</th><th class="num">req/s</th><th class="num">errors (1 min)</th><th class="num">TTFT p50 / p99</th><th class="num">duration p50 / p99</th><th>ejected</th></tr></thead><tbody id="workers"></tbody></table></div>
<p class="note">req/s over the last 10 s; errors and percentiles over the last minute, per attempt at the worker.</p></section>
<section><h2>Models</h2><div class="scroll"><table><thead><tr><th>model</th><th class="num">context ready</th><th class="num">generation ready</th><th class="num">in flight</th></tr></thead><tbody id="models"></tbody></table></div>
<p class="note">What each worker's GET /v1/models names; a request goes to its model's workers when several are served.</p></section>
<section><h2>Requests by route</h2><div class="scroll"><table><thead><tr><th>route</th><th>outcome</th><th class="num">req/s</th><th class="num">total</th></tr></thead><tbody id="routes"></tbody></table></div></section>
<section><h2>Last 50 failed requests</h2><div class="scroll"><table><thead><tr><th>time</th><th>route</th><th class="num">disagg_request_id</th><th>worker</th><th>outcome</th><th class="num">status</th><th>message</th></tr></thead><tbody id="failures"></tbody></table></div></section>
</main>`;

function sha256(text: string): string {
  return `'sha256-${createHash("sha256").update(text, "utf8").digest("base64")}'`;
}

export interface DashboardPage {
  readonly html: string;
  /** Only this page's own inline style and script run; it may talk to its own origin only. */
  readonly contentSecurityPolicy: string;
}

/** The page, built once per server: one HTML document with everything inline (no request leaves for a script, font or CDN). */
export function dashboardPage(): DashboardPage {
  if (script.includes("</script")) throw new Error("the dashboard script must not close its own <script> element");
  const html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>disagg-proxy dashboard</title><link rel="icon" href="data:,"><style>${STYLE}</style></head>
<body>${BODY}<script>${script}</script></body></html>`;
  const contentSecurityPolicy = [
    "default-src 'none'",
    `script-src ${sha256(script)}`,
    `style-src ${sha256(STYLE)}`,
    "connect-src 'self'",
    "img-src data:",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
  return { html, contentSecurityPolicy };
}
