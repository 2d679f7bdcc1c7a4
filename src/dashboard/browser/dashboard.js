// @ts-check
// The dashboard page's script, inlined into /dashboard (its hash is the only script the page's
// Content-Security-Policy allows). It reads one snapshot per second from /dashboard/events (SSE),
// keeps 15 minutes of chart points and draws everything with the DOM: text only through
// textContent, so nothing a worker or client wrote can become markup.
// Type-checked on its own (src/dashboard/browser/tsconfig.json: DOM types, no Bun).

/** @typedef {"ok"|"worker_error"|"client_disconnected"|"timeout"|"rejected"|"internal_error"} Outcome */
/** @typedef {{ at: number[], outcomes: Record<Outcome, number[]>, inFlight: number[], ttftP50Ms: (number|null)[], ttftP99Ms: (number|null)[] }} Series */
/** @typedef {{ role: string, url: string, id?: string, version?: string, state: string, lastCheckAt?: number, inFlight: number, perSecond: number, errorShare?: number, ttftP50Ms?: number, ttftP99Ms?: number, durationP50Ms?: number, durationP99Ms?: number, ejectedAt?: number }} WorkerRow */
/** @typedef {{ route: string, outcome: Outcome, total: number, perSecond: number }} RouteRow */
/** @typedef {{ at: number, route: string, disaggRequestId?: string, worker?: string, outcome: Outcome, status: number, message?: string }} FailureRow */
/** @typedef {{ source: string, endpoint?: string, connected?: boolean, revision?: string, lastError?: string, lastChangeAt?: number }} DiscoveryView */
/** @typedef {{ version: string, pid: number, startedAt: number, draining: boolean, inFlight: number, streamsOpen: number, keepalivesSent: number, admission: { inFlight: number, waiting: number, limit: number }, discovery: DiscoveryView, requests: RouteRow[] }} ProxyView */
/** @typedef {{ model: string, contextReady: number, contextWorkers: number, generationReady: number, generationWorkers: number, inFlight: number }} ModelRow */
/** @typedef {{ now: number, proxy: ProxyView, workers: WorkerRow[], models: ModelRow[], series: Series, failures: FailureRow[] }} Snapshot */

(() => {
  const WINDOW_MS = 15 * 60 * 1000;
  const MAX_POINTS = 900;
  /** @type {Outcome[]} */
  const OUTCOMES = ["ok", "worker_error", "client_disconnected", "timeout", "rejected", "internal_error"];
  const SVG_NS = "http://www.w3.org/2000/svg";
  const W = 600;
  const H = 150;

  /** @type {Series} */
  const series = {
    at: [],
    outcomes: { ok: [], worker_error: [], client_disconnected: [], timeout: [], rejected: [], internal_error: [] },
    inFlight: [],
    ttftP50Ms: [],
    ttftP99Ms: [],
  };

  /** @param {string} id @returns {HTMLElement} */
  function byId(id) {
    const element = document.getElementById(id);
    if (element === null) throw new Error(`#${id} missing`);
    return element;
  }

  /** @param {string} tag @param {string} [text] @param {string} [className] */
  function el(tag, text, className) {
    const element = document.createElement(tag);
    if (text !== undefined) element.textContent = text;
    if (className !== undefined) element.className = className;
    return element;
  }

  /** @param {number | undefined | null} ms */
  function duration(ms) {
    if (ms === undefined || ms === null) return "–";
    if (ms < 1) return `${ms.toFixed(2)} ms`;
    if (ms < 1000) return `${ms < 10 ? ms.toFixed(1) : Math.round(ms)} ms`;
    return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  }

  /** @param {number} seconds */
  function span(seconds) {
    const s = Math.max(0, Math.floor(seconds));
    if (s < 60) return `${s} s`;
    if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
    if (s < 86_400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
    return `${Math.floor(s / 86_400)} d ${Math.floor((s % 86_400) / 3600)} h`;
  }

  /** @param {number | undefined} at @param {number} now */
  function ago(at, now) {
    return at === undefined ? "–" : `${span((now - at) / 1000)} ago`;
  }

  /** @param {number} n */
  function rate(n) {
    return n === 0 ? "0" : n < 10 ? n.toFixed(1) : String(Math.round(n));
  }

  /** @param {number | undefined} share */
  function percent(share) {
    return share === undefined ? "–" : `${(share * 100).toFixed(share > 0 && share < 0.1 ? 1 : 0)} %`;
  }

  /** @param {HTMLElement} body @param {HTMLElement[]} rows @param {number} columns @param {string} empty */
  function fill(body, rows, columns, empty) {
    if (rows.length === 0) {
      const placeholder = el("tr");
      const cell = el("td", empty, "empty");
      cell.setAttribute("colspan", String(columns));
      placeholder.append(cell);
      rows = [placeholder];
    }
    body.replaceChildren(...rows);
  }

  /** @param {[string, string, string?][]} cells field name, text, class */
  function row(cells) {
    const tr = el("tr");
    for (const [field, text, className] of cells) {
      const td = el("td", text, className);
      td.dataset["field"] = field;
      tr.append(td);
    }
    return tr;
  }

  /** @param {Snapshot} snapshot */
  function renderProxy(snapshot) {
    const proxy = snapshot.proxy;
    byId("version").textContent = `v${proxy.version}`;
    byId("uptime").textContent = span((snapshot.now - proxy.startedAt) / 1000);
    // An upgrade shows here: the new process has another pid and start time.
    byId("pid").textContent = String(proxy.pid);
    byId("started").textContent = new Date(proxy.startedAt).toLocaleString();
    const draining = byId("draining");
    draining.textContent = proxy.draining ? "draining" : "serving";
    draining.className = proxy.draining ? "badge bad" : "badge good";
    const total = proxy.requests.reduce((sum, r) => sum + r.perSecond, 0);
    const figures = /** @type {[string, string][]} */ ([
      ["requests/s", rate(total)],
      ["in flight", String(proxy.inFlight)],
      ["open streams", String(proxy.streamsOpen)],
      ["keepalives sent", String(proxy.keepalivesSent)],
      [
        "admission",
        proxy.admission.limit === 0 ? `${proxy.admission.inFlight} (no limit)` : `${proxy.admission.inFlight} / ${proxy.admission.limit}`,
      ],
      ["queued", String(proxy.admission.waiting)],
    ]);
    byId("figures").replaceChildren(
      ...figures.map(([label, value]) => {
        const box = el("div", undefined, "figure");
        box.dataset["figure"] = label;
        box.append(el("b", value), el("span", label));
        return box;
      }),
    );
    const d = proxy.discovery;
    const parts = [d.source];
    if (d.endpoint !== undefined) parts.push(d.endpoint);
    if (d.connected !== undefined) parts.push(d.connected ? "connected" : "disconnected");
    if (d.revision !== undefined) parts.push(`revision ${d.revision}`);
    if (d.lastChangeAt !== undefined) parts.push(`last change ${ago(d.lastChangeAt, snapshot.now)}`);
    if (d.lastError !== undefined) parts.push(d.lastError);
    const discovery = byId("discovery");
    discovery.textContent = parts.join(" · ");
    discovery.className = d.connected === false ? "bad" : "";
    fill(
      byId("routes"),
      proxy.requests.map((r) =>
        row([
          ["route", r.route],
          ["outcome", r.outcome, `o-${r.outcome}`],
          ["perSecond", rate(r.perSecond), "num"],
          ["total", String(r.total), "num"],
        ]),
      ),
      4,
      "no request yet",
    );
  }

  /** @param {Snapshot} snapshot */
  function renderWorkers(snapshot) {
    const rows = snapshot.workers.map((w) => {
      const tr = row([
        ["role", w.role],
        ["url", w.id === undefined ? w.url : `${w.url} (${w.id})`, "url"],
        ["version", w.version ?? "–"],
        ["state", w.state, `state s-${w.state}`],
        ["lastCheck", ago(w.lastCheckAt, snapshot.now)],
        ["inFlight", String(w.inFlight), "num"],
        ["perSecond", rate(w.perSecond), "num"],
        ["errorShare", percent(w.errorShare), "num"],
        ["ttft", `${duration(w.ttftP50Ms)} / ${duration(w.ttftP99Ms)}`, "num"],
        ["duration", `${duration(w.durationP50Ms)} / ${duration(w.durationP99Ms)}`, "num"],
        ["ejected", w.ejectedAt === undefined ? "–" : ago(w.ejectedAt, snapshot.now)],
      ]);
      tr.dataset["role"] = w.role;
      tr.dataset["url"] = w.url;
      tr.dataset["state"] = w.state;
      return tr;
    });
    fill(byId("workers"), rows, 11, "no worker listed");
  }

  /** @param {Snapshot} snapshot */
  function renderModels(snapshot) {
    const rows = snapshot.models.map((m) => {
      const tr = row([
        ["model", m.model],
        ["contextReady", `${m.contextReady} / ${m.contextWorkers}`, "num"],
        ["generationReady", `${m.generationReady} / ${m.generationWorkers}`, "num"],
        ["inFlight", String(m.inFlight), "num"],
      ]);
      tr.dataset["model"] = m.model;
      return tr;
    });
    fill(byId("models"), rows, 4, "no worker named its model");
  }

  /** @param {Snapshot} snapshot */
  function renderFailures(snapshot) {
    const rows = snapshot.failures.map((f) =>
      row([
        ["at", new Date(f.at).toLocaleTimeString()],
        ["route", f.route],
        ["id", f.disaggRequestId ?? "–", "num"],
        ["worker", f.worker ?? "–", "url"],
        ["outcome", f.outcome, `o-${f.outcome}`],
        ["status", String(f.status), "num"],
        ["message", f.message ?? "", "msg"],
      ]),
    );
    fill(byId("failures"), rows, 7, "no failed request");
  }

  /** @param {Series} incoming */
  function merge(incoming) {
    const last = series.at.at(-1) ?? -Infinity;
    incoming.at.forEach((at, i) => {
      if (at <= last) return;
      series.at.push(at);
      for (const outcome of OUTCOMES) series.outcomes[outcome].push(incoming.outcomes[outcome][i] ?? 0);
      series.inFlight.push(incoming.inFlight[i] ?? 0);
      series.ttftP50Ms.push(incoming.ttftP50Ms[i] ?? null);
      series.ttftP99Ms.push(incoming.ttftP99Ms[i] ?? null);
    });
    const extra = series.at.length - MAX_POINTS;
    if (extra > 0) {
      series.at.splice(0, extra);
      for (const outcome of OUTCOMES) series.outcomes[outcome].splice(0, extra);
      for (const column of [series.inFlight, series.ttftP50Ms, series.ttftP99Ms]) column.splice(0, extra);
    }
  }

  /**
   * Redraws one chart: a path per line (a null value breaks it), scaled to the largest value.
   * @param {string} id @param {{ name: string, values: (number|null)[], className: string }[]} lines @param {number} now @param {(v: number) => string} label
   */
  function chart(id, lines, now, label) {
    const svg = byId(id);
    // Up to 15 minutes; a young proxy's few points spread over at least one minute.
    const shown = Math.min(WINDOW_MS, Math.max(60_000, now - (series.at[0] ?? now)));
    const start = now - shown;
    let max = 0;
    for (const line of lines) for (const v of line.values) if (v !== null && v > max) max = v;
    const top = max === 0 ? 1 : max * 1.1;
    const paths = lines.map((line) => {
      let d = "";
      let pen = false;
      line.values.forEach((v, i) => {
        const at = series.at[i] ?? start;
        if (v === null || at < start) {
          pen = false;
          return;
        }
        const x = (((at - start) / shown) * W).toFixed(1);
        const y = (H - (v / top) * H).toFixed(1);
        d += `${pen ? "L" : "M"}${x} ${y}`;
        pen = true;
      });
      const path = document.createElementNS(SVG_NS, "path");
      path.setAttribute("d", d);
      path.setAttribute("class", line.className);
      path.setAttribute("vector-effect", "non-scaling-stroke");
      return path;
    });
    svg.replaceChildren(...paths);
    svg.dataset["points"] = String(series.at.length);
    svg.dataset["lastAt"] = String(series.at.at(-1) ?? "");
    const scale = svg.parentElement?.querySelector(".scale");
    if (scale) scale.textContent = `max ${label(max)}`;
  }

  function drawCharts() {
    const now = series.at.at(-1) ?? Date.now();
    chart(
      "chart-outcomes",
      OUTCOMES.map((outcome) => ({ name: outcome, values: series.outcomes[outcome], className: `line o-${outcome}` })),
      now,
      (v) => `${rate(v)}/s`,
    );
    chart("chart-inflight", [{ name: "in flight", values: series.inFlight, className: "line inflight" }], now, (v) =>
      String(Math.round(v)),
    );
    chart(
      "chart-ttft",
      [
        { name: "p50", values: series.ttftP50Ms, className: "line p50" },
        { name: "p99", values: series.ttftP99Ms, className: "line p99" },
      ],
      now,
      duration,
    );
  }

  /** @param {string} text */
  function onSnapshot(text) {
    /** @type {Snapshot} */
    const snapshot = JSON.parse(text);
    merge(snapshot.series);
    renderProxy(snapshot);
    renderWorkers(snapshot);
    renderModels(snapshot);
    renderFailures(snapshot);
    drawCharts();
    const live = byId("live");
    live.textContent = `updated ${new Date(snapshot.now).toLocaleTimeString()}`;
    live.className = "live good";
    document.body.dataset["updates"] = String(Number(document.body.dataset["updates"] ?? "0") + 1);
  }

  const events = new EventSource("/dashboard/events");
  events.addEventListener("snapshot", (event) => {
    if (event instanceof MessageEvent && typeof event.data === "string") onSnapshot(event.data);
  });
  events.addEventListener("error", () => {
    const live = byId("live");
    live.textContent = events.readyState === EventSource.CLOSED ? "disconnected" : "reconnecting…";
    live.className = "live bad";
  });
})();
