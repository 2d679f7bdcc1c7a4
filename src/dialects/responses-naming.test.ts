import { describe, expect, test } from "bun:test";
import type { JsonObject } from "../json/json.ts";
import { nameResponsesRequest, responseIdFor } from "./responses-naming.ts";

describe("responseIdFor", () => {
  test("names a response resp_<disagg_request_id>_<16 hex>", () => {
    expect(responseIdFor(101n, "0123456789abcdef")).toBe("resp_101_0123456789abcdef");
  });

  test("keeps a 63-bit disaggregated request id exact", () => {
    expect(responseIdFor(9_223_372_036_854_775_807n, "ffffffffffffffff")).toBe("resp_9223372036854775807_ffffffffffffffff");
  });

  test("draws a fresh random part for each name", () => {
    const first = responseIdFor(101n);
    const second = responseIdFor(101n);
    expect(first).toMatch(/^resp_101_[0-9a-f]{16}$/);
    expect(second).toMatch(/^resp_101_[0-9a-f]{16}$/);
    expect(first).not.toBe(second);
  });

  test("rejects a random part that is not 16 lowercase hex digits", () => {
    expect(() => responseIdFor(1n, "xyz")).toThrow(RangeError);
    expect(() => responseIdFor(1n, "0123456789ABCDEF")).toThrow(RangeError);
  });
});

describe("nameResponsesRequest", () => {
  test("sets request_id when the client did not and returns it", () => {
    const body: JsonObject = { model: "m", input: "hi" };
    const name = nameResponsesRequest(body, 101n);
    expect(name).toMatch(/^resp_101_[0-9a-f]{16}$/);
    expect(body["request_id"]).toBe(name ?? "");
  });

  test("treats an explicit null request_id as unset, as a worker does", () => {
    const body: JsonObject = { request_id: null };
    expect(nameResponsesRequest(body, 7n)).toMatch(/^resp_7_/);
  });

  test("keeps a request_id the client set", () => {
    const body: JsonObject = { request_id: "client-chosen" };
    expect(nameResponsesRequest(body, 101n)).toBe("client-chosen");
    expect(body["request_id"]).toBe("client-chosen");
  });

  test("keeps the first name when a retried request gets a new disaggregated request id", () => {
    const body: JsonObject = {};
    const first = nameResponsesRequest(body, 101n);
    expect(nameResponsesRequest(body, 102n)).toBe(first ?? "");
  });

  test("names nothing after a request_id that is not a string", () => {
    const body: JsonObject = { request_id: 5 };
    expect(nameResponsesRequest(body, 101n)).toBeUndefined();
    expect(body["request_id"]).toBe(5);
  });
});
