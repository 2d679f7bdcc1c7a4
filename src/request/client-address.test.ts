import { describe, expect, test } from "bun:test";
import { parseNetwork, type Network } from "../security/networks.ts";
import { Clients, clientAddressOf } from "./client-address.ts";

const networks = (...texts: string[]): Network[] => texts.map((text) => parseNetwork(text)!);

describe("clientAddressOf", () => {
  test("without trusted proxies the peer is the client, whatever X-Forwarded-For says", () => {
    expect(clientAddressOf("10.0.0.5", "203.0.113.9", [])).toBe("10.0.0.5");
  });

  test("from a trusted peer, the right-most hop that is not itself trusted", () => {
    const trusted = networks("10.0.0.0/8");
    expect(clientAddressOf("10.0.0.5", "198.51.100.1, 203.0.113.9, 10.1.2.3", trusted)).toBe("203.0.113.9");
  });

  test("from a peer that is not trusted the header is ignored", () => {
    expect(clientAddressOf("192.0.2.7", "203.0.113.9", networks("10.0.0.0/8"))).toBe("192.0.2.7");
  });

  test("a hop that is no address ends the walk at the last trusted one; an IPv4-mapped peer shows as IPv4", () => {
    const trusted = networks("127.0.0.0/8");
    expect(clientAddressOf("::ffff:127.0.0.1", "unknown", trusted)).toBe("127.0.0.1");
    expect(clientAddressOf("::ffff:127.0.0.1", null, trusted)).toBe("127.0.0.1");
  });

  test("an oversized header is not read", () => {
    expect(clientAddressOf("127.0.0.1", `${"1.1.1.1, ".repeat(1000)}203.0.113.9`, networks("127.0.0.0/8"))).toBe("127.0.0.1");
  });
});

/** The client a Clients names for a request from the trusted proxy 10.0.0.1 with these headers. */
function from(clients: Clients, headers: Record<string, string>): string | undefined {
  const sent = new Request("http://proxy/v1/chat/completions", { headers });
  clients.note(sent, { peer: () => "10.0.0.1" });
  return clients.of(sent).address;
}

describe("Clients", () => {
  test("--client-address-header x-real-ip: a trusted proxy's X-Real-IP names the client, and X-Forwarded-For is not read", () => {
    const clients = new Clients({ trustedProxies: ["10.0.0.0/8"], clientAddressHeader: "x-real-ip" });
    expect(from(clients, { "x-real-ip": "203.0.113.7", "x-forwarded-for": "198.51.100.9" })).toBe("203.0.113.7");
    expect(from(clients, { "x-forwarded-for": "198.51.100.9" })).toBe("10.0.0.1");
  });

  test("by default X-Forwarded-For names the client", () => {
    const clients = new Clients({ trustedProxies: ["10.0.0.0/8"], clientAddressHeader: "x-forwarded-for" });
    expect(from(clients, { "x-real-ip": "203.0.113.7", "x-forwarded-for": "198.51.100.9" })).toBe("198.51.100.9");
  });
});
