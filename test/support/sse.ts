/** Splits an SSE text into events: `{event, data}` with data JSON-parsed when it is JSON. */
export interface ParsedEvent {
  readonly event: string | undefined;
  readonly data: Record<string, unknown>;
}

export function parseSseEvents(text: string): ParsedEvent[] {
  const events: ParsedEvent[] = [];
  for (const frame of text.split(/\r?\n\r?\n/)) {
    let event: string | undefined;
    const data: string[] = [];
    for (const line of frame.split(/\r?\n/)) {
      if (line.startsWith("event:")) event = line.slice(6).trim();
      else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
    }
    if (data.length === 0) continue;
    const joined = data.join("\n");
    if (joined === "[DONE]") continue;
    events.push({ event, data: JSON.parse(joined) as Record<string, unknown> });
  }
  return events;
}

/** Sequence numbers of Responses events must run 0, 1, 2… without a gap. */
export function sequenceNumbers(events: readonly ParsedEvent[]): number[] {
  return events.map((e) => e.data["sequence_number"] as number);
}

export function responseIds(events: readonly ParsedEvent[]): Set<string> {
  const ids = new Set<string>();
  for (const { data } of events) {
    const response = data["response"] as { id?: string } | undefined;
    if (response?.id) ids.add(response.id);
  }
  return ids;
}
