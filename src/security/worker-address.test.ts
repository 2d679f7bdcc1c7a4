import { expect, test } from "bun:test";
import { workerAddressRefusal, type WorkerAddressRules } from "./worker-address.ts";

const rules: WorkerAddressRules = { allowLinkLocal: false, ownPort: 8000, ownHosts: ["gpu-node-01", "10.0.0.5"] };

test("link-local and metadata addresses and names are refused unless allowed", () => {
  for (const origin of [
    "http://169.254.169.254:80",
    "http://169.254.1.2:8001",
    "http://[fe80::1]:8001",
    "http://[fd00:ec2::254]:80",
    "http://100.100.100.200:80",
    "http://metadata.google.internal:80",
    "http://Instance-Data.:80",
  ]) {
    expect([origin, workerAddressRefusal(origin, rules)]).toEqual([origin, expect.stringContaining("--allow-link-local-workers")]);
    expect(workerAddressRefusal(origin, { ...rules, allowLinkLocal: true })).toBeUndefined();
  }
});

test("the proxy's own listening address is refused as a worker, other ports and hosts are not", () => {
  for (const origin of [
    "http://127.0.0.1:8000",
    "http://127.1.2.3:8000",
    "http://[::1]:8000",
    "http://localhost:8000",
    "http://0.0.0.0:8000",
    "http://gpu-node-01:8000",
    "http://10.0.0.5:8000",
    "http://[::ffff:10.0.0.5]:8000",
  ]) {
    expect([origin, workerAddressRefusal(origin, rules)]).toEqual([origin, "the proxy's own address (requests would loop)"]);
  }
  for (const origin of ["http://127.0.0.1:8001", "http://10.0.0.6:8000", "http://gpu-node-02:8000", "https://worker.example"])
    expect(workerAddressRefusal(origin, rules)).toBeUndefined();
});
