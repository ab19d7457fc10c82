/**
 * How the service sets up V8 for a server's allocation pattern (many short requests in flight).
 *
 * `SERVICE_NODE_FLAGS`: the Node.js flags the service runs with (`npm start` passes them; so do the
 * tests and benches that start it). `--max-semi-space-size=32` sizes V8's young generation at about
 * 96 MB: by default it grows to over 130 MB on a machine with a large heap limit once many
 * long-lived requests (SSE followers) keep surviving scavenges, and that memory stays resident;
 * at 16 the scavenges came twice as often, each copying the requests in flight, for ~10 % less
 * throughput (bench/http-overhead.ts); 1,000 event stream followers grow RSS by ~40 MB
 * (bench/sse-fanout.ts).
 *
 * `applyServiceV8Flags` turns allocation-site pretenuring off, from inside the process so it holds
 * however the service is started (`npm start`, `npx wa serve`, the Docker image; NODE_OPTIONS
 * refuses this flag). Under load every request is in flight at some scavenge, so V8 sees its
 * allocation sites "survive" and starts allocating request objects (headers, requests, responses,
 * fibers) straight into the old generation: ~7 KB of garbage per request there, a mark-compact
 * every few seconds, and scavenges 2-3 times longer for the old-to-new pointers they leave. Off,
 * the old generation stays flat under load and the service answers ~10 % more requests.
 */
import { setFlagsFromString } from "node:v8"

export const SERVICE_NODE_FLAGS: ReadonlyArray<string> = ["--max-semi-space-size=32"]

export const applyServiceV8Flags = (): void => setFlagsFromString("--no-allocation-site-pretenuring")
