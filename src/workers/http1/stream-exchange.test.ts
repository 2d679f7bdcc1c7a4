import { describe, expect, test } from "bun:test";
import type { WorkerConnection } from "./connection.ts";
import { StreamExchange } from "./stream-exchange.ts";

/** A connection that only records what the exchange asks of it. */
function recorder(): { connection: WorkerConnection; calls: string[] } {
  const calls: string[] = [];
  const record = (name: string) => () => {
    calls.push(name);
  };
  const connection = { send: record("send"), pause: record("pause"), resume: record("resume"), abandon: record("abandon") };
  return { connection: connection as unknown as WorkerConnection, calls };
}

const piece = new Uint8Array([0x78]);

describe("StreamExchange", () => {
  test("a reader behind by 16 pieces pauses its connection, and resumes it once it has caught up to 7", async () => {
    const { connection, calls } = recorder();
    const exchange = new StreamExchange(undefined, undefined);
    exchange.start(connection, "", undefined);
    exchange.head({ status: 200, statusText: "OK", headers: new Headers(), length: undefined });
    for (let n = 0; n < 20; n++) exchange.body(piece);
    expect(calls).toEqual(["send", "pause"]);
    for (let n = 0; n < 13; n++) await exchange.read();
    expect(calls).toEqual(["send", "pause", "resume"]);
  });

  test("reading what it held after its answer ended never resumes the connection, which may be another call's", async () => {
    const { connection, calls } = recorder();
    const exchange = new StreamExchange(undefined, undefined);
    exchange.start(connection, "", undefined);
    exchange.head({ status: 200, statusText: "OK", headers: new Headers(), length: undefined });
    for (let n = 0; n < 20; n++) exchange.body(piece);
    exchange.end();
    let pieces = 0;
    while (!(await exchange.read()).done) pieces++;
    expect(pieces).toBe(20);
    expect(calls).toEqual(["send", "pause"]);
  });

  test("a reader behind by 256 KiB pauses its connection, however few the pieces, and resumes it below 128 KiB", async () => {
    const { connection, calls } = recorder();
    const exchange = new StreamExchange(undefined, undefined);
    exchange.start(connection, "", undefined);
    exchange.head({ status: 200, statusText: "OK", headers: new Headers(), length: undefined });
    const large = new Uint8Array(96 * 1024);
    for (let n = 0; n < 3; n++) exchange.body(large);
    expect(calls).toEqual(["send", "pause"]);
    await exchange.read();
    expect(calls).toEqual(["send", "pause"]);
    await exchange.read();
    expect(calls).toEqual(["send", "pause", "resume"]);
  });
});
