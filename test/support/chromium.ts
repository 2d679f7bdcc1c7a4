import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

type Params = Record<string, unknown>;
interface Message {
  id?: number;
  method?: string;
  params?: Params;
  sessionId?: string;
  result?: Params;
  error?: { message: string };
}

/**
 * Debian's headless Chromium driven over the DevTools protocol, with Bun's own WebSocket (no
 * puppeteer, no browser download): start, open a page, send commands, hear events.
 */
export class Chromium implements AsyncDisposable {
  readonly #process: Bun.Subprocess<"ignore", "ignore", "pipe">;
  readonly #socket: WebSocket;
  readonly #profile: string;
  readonly #pending = new Map<number, { resolve: (result: Params) => void; reject: (error: Error) => void }>();
  readonly #listeners: ((message: Message) => void)[] = [];
  #nextId = 1;

  private constructor(process: Bun.Subprocess<"ignore", "ignore", "pipe">, socket: WebSocket, profile: string) {
    this.#process = process;
    this.#socket = socket;
    this.#profile = profile;
    socket.addEventListener("message", (event) => {
      const message = JSON.parse(String(event.data)) as Message;
      if (message.id !== undefined) {
        const pending = this.#pending.get(message.id);
        this.#pending.delete(message.id);
        if (message.error) pending?.reject(new Error(message.error.message));
        else pending?.resolve(message.result ?? {});
      } else {
        for (const listener of this.#listeners) listener(message);
      }
    });
  }

  /** `args`: extra command-line switches (e.g. `--host-resolver-rules=MAP name 127.0.0.1`). */
  static async launch(args: readonly string[] = []): Promise<Chromium> {
    const profile = mkdtempSync(join(tmpdir(), "chromium-profile-"));
    const process = Bun.spawn(
      [
        "chromium",
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--hide-scrollbars",
        "--disable-extensions",
        "--remote-debugging-port=0",
        `--user-data-dir=${profile}`,
        ...args,
        "about:blank",
      ],
      { stdin: "ignore", stdout: "ignore", stderr: "pipe" },
    );
    // Chromium announces its DevTools endpoint on stderr.
    const reader = process.stderr.pipeThrough(new TextDecoderStream()).getReader();
    let text = "";
    let endpoint: string | undefined;
    while (endpoint === undefined) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`chromium exited before listening: ${text}`);
      text += value;
      endpoint = /DevTools listening on (ws:\/\/\S+)/.exec(text)?.[1];
    }
    // Keep draining stderr so the browser never blocks on a full pipe.
    void (async () => {
      while (!(await reader.read()).done);
    })();
    const socket = new WebSocket(endpoint);
    await new Promise<void>((resolve, reject) => {
      socket.addEventListener("open", () => resolve(), { once: true });
      socket.addEventListener("error", () => reject(new Error("DevTools websocket failed")), { once: true });
    });
    return new Chromium(process, socket, profile);
  }

  send(method: string, params: Params = {}, sessionId?: string): Promise<Params> {
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#socket.send(JSON.stringify({ id, method, params, ...(sessionId === undefined ? {} : { sessionId }) }));
    });
  }

  /** Every protocol event, from any session. */
  onEvent(listener: (method: string, params: Params, sessionId: string | undefined) => void): void {
    this.#listeners.push((message) => {
      if (message.method !== undefined) listener(message.method, message.params ?? {}, message.sessionId);
    });
  }

  /** The next `method` event of `sessionId` (register before triggering it). */
  nextEvent(method: string, sessionId: string): Promise<Params> {
    return new Promise((resolve) => {
      const listener = (message: Message): void => {
        if (message.method !== method || message.sessionId !== sessionId) return;
        this.#listeners.splice(this.#listeners.indexOf(listener), 1);
        resolve(message.params ?? {});
      };
      this.#listeners.push(listener);
    });
  }

  /** A new tab, attached: returns its session id. */
  async newPage(): Promise<string> {
    const { targetId } = await this.send("Target.createTarget", { url: "about:blank" });
    const { sessionId } = await this.send("Target.attachToTarget", { targetId, flatten: true });
    return String(sessionId);
  }

  /** Evaluates an expression in the page and returns its value (JSON-serialisable). */
  async evaluate<T>(sessionId: string, expression: string): Promise<T> {
    const reply = await this.send("Runtime.evaluate", { expression, returnByValue: true, awaitPromise: true }, sessionId);
    const details = reply["exceptionDetails"];
    if (details !== undefined) throw new Error(`page threw: ${JSON.stringify(details)}`);
    return (reply["result"] as { value: T }).value;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.#socket.close();
    this.#process.kill();
    await this.#process.exited;
    rmSync(this.#profile, { recursive: true, force: true });
  }
}
