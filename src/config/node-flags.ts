/**
 * The Node.js flags the service runs with (`npm start` passes them; so do the tests and benches
 * that start it). `--max-semi-space-size=16` caps V8's young generation at about 48 MB: by default
 * it grows to over 130 MB on a machine with a large heap limit once many long-lived requests (SSE
 * followers) keep surviving scavenges, and that memory stays resident. With the cap, 1,000 event
 * stream followers cost about half the RSS; throughput is the same (bench/sse-fanout.ts,
 * bench/http-overhead.ts).
 */
export const SERVICE_NODE_FLAGS: ReadonlyArray<string> = ["--max-semi-space-size=16"]
