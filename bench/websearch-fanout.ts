/**
 * WebSearch fan-out latency: 10 queries × 3 fake engines (Brave, Google, Tavily formats on
 * loopback) that each answer after 200 ms. Prints the median wall time of 20 runs of
 * `WebSearch.run` and the target (slowest engine + 50 ms), after 2 warm-up runs.
 *
 *   node bench/websearch-fanout.ts [runs=20] [latencyMs=200]
 */
import { Effect, Layer } from "effect"
import { FetchHttpClient } from "effect/http"
import { Reader } from "../src/reader/reader.ts"
import { ReaderBrowser } from "../src/reader/reader-browser.ts"
import { decodeWebSearchRequest } from "../src/domain/web-search.ts"
import { WebSearch } from "../src/engines/web-search.ts"
import { startFakeEngines } from "../test/fixtures/engines/fake-engines.ts"
import { settingsFor } from "../test/fixtures/engines/settings.ts"

const runs = Number(process.argv[2] ?? 20)
const latencyMs = Number(process.argv[3] ?? 200)
const engines = ["brave", "google", "tavily"] as const
const queries = Array.from({ length: 10 }, (_, i) => `benchmark query number ${i + 1}`)

const fake = await startFakeEngines({
  results: (engine, query) =>
    Array.from({ length: 10 }, (_, i) => ({
      url: `https://example${(i + query.length) % 13}.com/${engine}/${i}`,
      title: `${engine} result ${i} for ${query}`,
      snippet: `A snippet for ${query} from ${engine}, position ${i + 1}.`
    }))
})
for (const engine of engines) fake.setBehavior(engine, { latencyMs })

const median = (values: Array<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

const program = Effect.gen(function*() {
  const search = yield* WebSearch
  const request = yield* decodeWebSearchRequest({ queries, engines: [...engines] })
  const times: Array<number> = []
  let last = 0
  for (let i = 0; i < runs + 2; i++) {
    const started = performance.now()
    const result = yield* search.run(request)
    const elapsed = performance.now() - started
    if (result.unresponsive_engines.length > 0) throw new Error(`unresponsive: ${result.unresponsive_engines.join(", ")}`)
    last = result.total_unique_results
    if (i >= 2) times.push(elapsed) // the first two runs warm up connections and the JIT
  }
  return { times, last }
}).pipe(
  Effect.provide(
    WebSearch.layerWith(settingsFor(fake.url, engines)).pipe(
      Layer.provide([FetchHttpClient.layer, Reader.layerWith().pipe(Layer.provide(ReaderBrowser.layerWith({ executablePath: process.env["CHROMIUM_PATH"] })))])
    )
  )
)

const { times, last } = await Effect.runPromise(program)
await fake.close()
const target = latencyMs + 50
console.log(`websearch fan-out: ${queries.length} queries x ${engines.length} engines (${queries.length * engines.length} calls), engines answer in ${latencyMs} ms`)
console.log(`  runs: ${times.length}, unique results per run: ${last}`)
console.log(`  median: ${median(times).toFixed(1)} ms   min: ${Math.min(...times).toFixed(1)} ms   max: ${Math.max(...times).toFixed(1)} ms`)
console.log(`  target: <= ${target} ms (slowest engine + 50 ms)   ${median(times) <= target ? "MET" : "NOT MET"}`)
