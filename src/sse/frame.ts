/** One complete SSE frame, its fields decoded from its bytes only when first read. */

export interface SseFrame {
  /** The frame's exact bytes, including its terminating blank line (and any blank lines before it). */
  readonly raw: Uint8Array;
  /** Value of its `event:` line (the last one wins, as in the spec). */
  readonly event: string | undefined;
  /** Data lines joined with "\n"; undefined when the frame has no `data` line. */
  readonly data: string | undefined;
  /** The frame is made only of `:` comment lines (a keepalive). */
  readonly isComment: boolean;
}

// Stateless when used without {stream: true}: each call decodes one complete frame.
const utf8 = new TextDecoder();

interface FrameFields {
  readonly event: string | undefined;
  readonly data: string | undefined;
}

/** Spec field parsing: `name:value`, one optional space after the colon; unknown fields ignored. */
function parseFields(raw: Uint8Array): FrameFields {
  let event: string | undefined;
  const data: string[] = [];
  for (const line of utf8.decode(raw).split(/\r\n|\r|\n/)) {
    if (line === "" || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const name = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (name === "event") event = value;
    else if (name === "data") data.push(value);
  }
  return { event, data: data.length === 0 ? undefined : data.join("\n") };
}

export class ScannedFrame implements SseFrame {
  readonly raw: Uint8Array;
  readonly isComment: boolean;
  #fields: FrameFields | undefined;

  constructor(raw: Uint8Array, isComment: boolean) {
    this.raw = raw;
    this.isComment = isComment;
  }

  get event(): string | undefined {
    return this.#decoded().event;
  }

  get data(): string | undefined {
    return this.#decoded().data;
  }

  #decoded(): FrameFields {
    this.#fields ??= parseFields(this.raw);
    return this.#fields;
  }
}

