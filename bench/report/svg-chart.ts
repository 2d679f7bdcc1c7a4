/**
 * A small SVG line chart: a few series over one x axis (linear or log2), y from zero, ticks,
 * axis titles and a legend. Plain SVG 1.1 text with no scripts, so GitHub renders it inline.
 */

export interface Series {
  readonly name: string;
  readonly color: string;
  readonly points: readonly (readonly [number, number])[];
  readonly dashed?: boolean;
}

export interface ChartSpec {
  readonly title: string;
  readonly xLabel: string;
  readonly yLabel: string;
  readonly series: readonly Series[];
  readonly xScale: "linear" | "log2";
  /** Horizontal reference line (a target), drawn dotted with its label. */
  readonly reference?: { readonly y: number; readonly label: string };
}

const W = 720;
const H = 400;
const M = { left: 80, right: 200, top: 44, bottom: 56 };

export function lineChart(spec: ChartSpec): string {
  const xs = spec.series.flatMap((s) => s.points.map(([x]) => x));
  const ys = [...spec.series.flatMap((s) => s.points.map(([, y]) => y)), spec.reference?.y ?? 0].filter(Number.isFinite);
  const tx = spec.xScale === "log2" ? (x: number) => Math.log2(Math.max(x, 1e-9)) : (x: number) => x;
  const [x0, x1] = [Math.min(...xs.map(tx)), Math.max(...xs.map(tx))];
  const yMax = niceCeil(Math.max(...ys, 1e-9) * 1.08);
  const px = (x: number): number => M.left + ((tx(x) - x0) / (x1 - x0 || 1)) * (W - M.left - M.right);
  const py = (y: number): number => H - M.bottom - (y / yMax) * (H - M.top - M.bottom);
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${W / 2 - M.right / 2 + M.left / 2}" y="24" text-anchor="middle" font-size="15" font-weight="bold">${esc(spec.title)}</text>`,
    ...yTicks(yMax).map((y) => gridLine(py(y), fmt(y))),
    ...xTicks(xs, spec.xScale).map((x) => `<text x="${px(x).toFixed(1)}" y="${H - M.bottom + 18}" text-anchor="middle">${fmt(x)}</text>`),
    `<line x1="${M.left}" y1="${H - M.bottom}" x2="${W - M.right}" y2="${H - M.bottom}" stroke="black"/>`,
    `<line x1="${M.left}" y1="${M.top}" x2="${M.left}" y2="${H - M.bottom}" stroke="black"/>`,
    `<text x="${(M.left + W - M.right) / 2}" y="${H - 14}" text-anchor="middle">${esc(spec.xLabel)}</text>`,
    `<text transform="translate(18 ${(M.top + H - M.bottom) / 2}) rotate(-90)" text-anchor="middle">${esc(spec.yLabel)}</text>`,
    ...(spec.reference ? [referenceLine(py(spec.reference.y), spec.reference.label)] : []),
    ...spec.series.map((s) => seriesPath(s, px, py)),
    ...spec.series.map((s, i) => legendEntry(s, i)),
    `</svg>`,
  ];
  return `${parts.join("\n")}\n`;
}

function seriesPath(s: Series, px: (x: number) => number, py: (y: number) => number): string {
  const points = s.points.filter(([, y]) => Number.isFinite(y));
  const d = points.map(([x, y], i) => `${i === 0 ? "M" : "L"}${px(x).toFixed(1)} ${py(y).toFixed(1)}`).join(" ");
  const dash = s.dashed === true ? ` stroke-dasharray="6 4"` : "";
  const dots = points.map(([x, y]) => `<circle cx="${px(x).toFixed(1)}" cy="${py(y).toFixed(1)}" r="3.5" fill="${s.color}"/>`);
  return [`<path d="${d}" fill="none" stroke="${s.color}" stroke-width="2"${dash}/>`, ...dots].join("\n");
}

function legendEntry(s: Series, index: number): string {
  const y = M.top + 10 + index * 22;
  const x = W - M.right + 16;
  const dash = s.dashed === true ? ` stroke-dasharray="6 4"` : "";
  return `<line x1="${x}" y1="${y}" x2="${x + 26}" y2="${y}" stroke="${s.color}" stroke-width="2"${dash}/><text x="${x + 32}" y="${y + 4}">${esc(s.name)}</text>`;
}

function gridLine(y: number, label: string): string {
  return `<line x1="${M.left}" y1="${y.toFixed(1)}" x2="${W - M.right}" y2="${y.toFixed(1)}" stroke="#e4e4e4"/><text x="${M.left - 8}" y="${(y + 4).toFixed(1)}" text-anchor="end">${label}</text>`;
}

function referenceLine(y: number, label: string): string {
  return `<line x1="${M.left}" y1="${y.toFixed(1)}" x2="${W - M.right}" y2="${y.toFixed(1)}" stroke="#c00" stroke-dasharray="2 3"/><text x="${W - M.right - 4}" y="${(y - 5).toFixed(1)}" text-anchor="end" fill="#c00">${esc(label)}</text>`;
}

/** 1, 2 or 5 times a power of ten, at or above v. */
function niceCeil(v: number): number {
  const power = 10 ** Math.floor(Math.log10(v));
  for (const step of [1, 2, 2.5, 5, 10]) if (step * power >= v) return step * power;
  return 10 * power;
}

/** The data's own x values when there are few (concurrency levels), else round steps. */
function xTicks(xs: readonly number[], scale: ChartSpec["xScale"]): number[] {
  const distinct = [...new Set(xs)].toSorted((a, b) => a - b);
  if (scale === "log2" || distinct.length <= 8) return distinct;
  const max = Math.max(...distinct);
  const step = niceCeil(max / 6);
  return Array.from({ length: Math.floor(max / step) + 1 }, (_, i) => i * step);
}

function yTicks(yMax: number): number[] {
  return Array.from({ length: 6 }, (_, i) => (yMax * i) / 5);
}

function fmt(v: number): string {
  if (v === 0) return "0";
  if (Math.abs(v) >= 10_000) return `${Math.round(v / 1000)}k`;
  return Number.isInteger(v) ? String(v) : v.toPrecision(3).replace(/\.?0+$/, "");
}

function esc(text: string): string {
  return text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
}
