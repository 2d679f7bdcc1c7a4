/**
 * The clock per-request perf metrics are stamped with, in seconds. Monotonic within a process;
 * processes on one host start from the wall clock, so they agree closely before any sync. Real
 * workers use another origin (time since boot): the NTP-style sync at start-up (§5.4) makes each
 * worker add the difference to what it reports.
 */
export type SteadyClock = () => number;

export const steadySeconds: SteadyClock = () => (performance.timeOrigin + performance.now()) / 1000;
