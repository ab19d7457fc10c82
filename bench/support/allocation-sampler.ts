/**
 * Loaded into the service by `bench/http-overhead.ts --alloc` (node --import): V8's sampling heap
 * profiler, counting objects that were collected again too, so the profile holds what was
 * allocated rather than what survived. The first SIGUSR2 starts sampling, the second writes the
 * profile to WA_BENCH_ALLOC_PROFILE (a .heapprofile, which Chrome DevTools opens too).
 */
import { writeFileSync } from "node:fs"
import { Session } from "node:inspector/promises"

const target = process.env["WA_BENCH_ALLOC_PROFILE"]
if (target !== undefined) {
  const session = new Session()
  session.connect()
  let sampling = false
  process.on("SIGUSR2", () => {
    const step = sampling
      ? session.post("HeapProfiler.stopSampling").then(({ profile }) => writeFileSync(target, JSON.stringify(profile)))
      : session.post("HeapProfiler.startSampling", {
        samplingInterval: 16_384,
        includeObjectsCollectedByMajorGC: true,
        includeObjectsCollectedByMinorGC: true
      })
    sampling = !sampling
    step.catch((error: unknown) => process.stderr.write(`allocation sampler: ${String(error)}\n`))
  })
}
