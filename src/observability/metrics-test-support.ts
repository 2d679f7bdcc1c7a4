/** Reading a rendered exposition in metrics tests. */

export const CHAT = "/v1/chat/completions";

/** The value of one exposed series, e.g. `total_requests_total` or `x_total{route="/a"}`; undefined if absent. */
export function valueOf(text: string, series: string): number | undefined {
  const line = text.split("\n").find((l) => l.slice(0, l.lastIndexOf(" ")) === series);
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1));
}

/** The `le` labels of a histogram, in exposition order. */
export function bucketBounds(text: string, histogram: string): string[] {
  const prefix = `${histogram}_bucket{le="`;
  return text
    .split("\n")
    .filter((l) => l.startsWith(prefix))
    .map((l) => l.slice(prefix.length, l.indexOf('"', prefix.length)));
}
