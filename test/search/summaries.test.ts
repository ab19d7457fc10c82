/**
 * Summaries and model re-ranking: pages are read with the real Reader (Chromium) from a local
 * site; the model is the scripted OpenAI-compatible Chat Completions server, reached through the
 * service's own OpenAI-compatible provider.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { LanguageModel } from "effect/ai"
import { FetchHttpClient } from "effect/http"
import { createServer } from "node:http"
import { Reader } from "../../src/reader/reader.ts"
import { ReaderBrowser } from "../../src/reader/reader-browser.ts"
import { decodeWebSearchRequest, type WebSearchRequestEncoded } from "../../src/domain/web-search.ts"
import { WebSearch } from "../../src/engines/web-search.ts"
import { type FakeEngines, fakeEngines } from "../fixtures/engines/fake-engines.ts"
import { makeOpenAiCompatible } from "../../src/agent/providers/openai-compatible.ts"
import { type ChatRequest, promptText, scriptedModel } from "../fixtures/model/scripted-model.ts"
import { settingsFor } from "../fixtures/engines/settings.ts"

const articles: Record<string, { title: string; paragraphs: Array<string> }> = {
  "/breaker": {
    title: "Circuit breakers in distributed systems",
    paragraphs: [
      "Distributed systems fail in partial and surprising ways, and every remote call can hang.",
      "The weather in the valley was mild this spring, with little rain and long evenings.",
      "A circuit breaker stops calling a failing dependency after several consecutive failures.",
      "Our office moved to a new building with a larger kitchen and a quiet library.",
      "After a cool-down period the circuit breaker lets one trial call through to test the dependency.",
      "The annual picnic had sandwiches, lemonade and a long game of football on the grass."
    ]
  },
  "/retry": {
    title: "Retrying with exponential backoff",
    paragraphs: [
      "Retries smooth over transient network errors when they are spaced out with exponential backoff.",
      "Jitter spreads the retries of many clients so they do not hit the server at the same moment.",
      "Retries without a limit can turn a short outage into a long one by overloading the dependency.",
      "Combining retries with a circuit breaker keeps a failing dependency from being hammered."
    ]
  }
}

const page = (a: { title: string; paragraphs: Array<string> }) =>
  `<!doctype html><html lang="en"><head><title>${a.title}</title></head><body>
  <nav><a href="/">Home</a> <a href="/about">About</a></nav>
  <article><h1>${a.title}</h1>${a.paragraphs.map((p) => `<p>${p}</p>`).join("\n")}</article>
  <footer>Copyright the fixture site</footer></body></html>`

const site = Effect.acquireRelease(
  Effect.promise(async () => {
    const server = createServer((request, response) => {
      const article = articles[request.url ?? ""]
      if (article === undefined) {
        response.writeHead(404).end()
        return
      }
      response.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(page(article))
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    const address = server.address()
    return { server, url: `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}` }
  }),
  ({ server }) => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
)

const readerLayer = Reader.layerWith({ allowPrivate: true }).pipe(Layer.provide(ReaderBrowser.layerWith({ executablePath: process.env["CHROMIUM_PATH"] })))

const modelLayer = (baseUrl: string) =>
  Layer.effect(LanguageModel.LanguageModel, makeOpenAiCompatible({ baseUrl, apiKey: undefined, model: "fake-model" })).pipe(
    Layer.provide(FetchHttpClient.layer)
  )

const searchLayer = (fake: FakeEngines, model?: Layer.Layer<LanguageModel.LanguageModel>) =>
  WebSearch.layerWith(settingsFor(fake.url, ["brave", "google"])).pipe(
    Layer.provide([FetchHttpClient.layer, readerLayer, ...(model === undefined ? [] : [model])])
  )

const run = (input: WebSearchRequestEncoded) =>
  Effect.gen(function*() {
    const search = yield* WebSearch
    return yield* search.run(yield* Effect.orDie(decodeWebSearchRequest(input)))
  })

const resultsFor = (origin: string) => (engine: string) =>
  engine === "brave"
    ? [
      { url: `${origin}/breaker`, title: "Circuit breakers", snippet: "How circuit breakers work." },
      { url: `${origin}/retry`, title: "Retrying", snippet: "Backoff and jitter." }
    ]
    : [{ url: `${origin}/retry`, title: "Retrying with backoff", snippet: "Exponential backoff explained." }]

/** The scripted model: JSON relevance scores when asked for an object, else a summary naming the page. */
const textScript = (request: ChatRequest): string => {
  const prompt = promptText(request)
  if (request.response_format !== undefined) {
    // Rank the breaker page (listed second after fusion) above the retry page.
    const ids = [...prompt.matchAll(/\[(\d+)\] ([^\n]*)/g)].map((m) => ({ id: Number(m[1]), title: m[2]! }))
    return JSON.stringify({ scores: ids.map(({ id, title }) => ({ id, score: title.includes("Circuit") ? 9 : 2 })) })
  }
  const title = prompt.match(/Page title: (.*)/)?.[1] ?? "?"
  return `Model summary of "${title}".`
}

describe("WebSearch summaries", () => {
  it.effect("without a model: extractive summaries of the most relevant sentences", () =>
    Effect.gen(function*() {
      const { url } = yield* site
      const fake = yield* fakeEngines({ results: resultsFor(url) })
      const result = yield* run({
        queries: ["circuit breaker"],
        summarize: true,
        objective: "how does a circuit breaker handle a failing dependency"
      }).pipe(Effect.provide(searchLayer(fake)))
      assert.isTrue(result.is_summarized)
      assert.strictEqual(result.summary_method, "extractive")
      const breaker = result.results.find((r) => r.url.endsWith("/breaker"))!
      assert.include(breaker.summary!, "A circuit breaker stops calling a failing dependency")
      assert.include(breaker.summary!, "lets one trial call through")
      assert.notInclude(breaker.summary!, "picnic")
      assert.notInclude(breaker.summary!, "weather")
      const retry = result.results.find((r) => r.url.endsWith("/retry"))!
      assert.isString(retry.summary)
    }))

  it.effect("with a model: summaries written by the model, from the page content", () =>
    Effect.gen(function*() {
      const { url } = yield* site
      const fake = yield* fakeEngines({ results: resultsFor(url) })
      const model = yield* scriptedModel((request) => ({ text: textScript(request) }))
      const result = yield* run({ queries: ["circuit breaker"], summarize: true }).pipe(
        Effect.provide(searchLayer(fake, modelLayer(model.baseUrl)))
      )
      assert.isTrue(result.is_summarized)
      assert.strictEqual(result.summary_method, "model")
      const breaker = result.results.find((r) => r.url.endsWith("/breaker"))!
      assert.strictEqual(breaker.summary, `Model summary of "Circuit breakers in distributed systems".`)
      // The model saw the page's main content, without the navigation and footer.
      const prompt = model.requests.map(promptText).find((p) => p.includes("Circuit breakers in distributed systems"))!
      assert.include(prompt, "lets one trial call through")
      assert.notInclude(prompt, "Copyright the fixture site")
    }))

  it.effect("with a model: rerank asks it for relevance scores", () =>
    Effect.gen(function*() {
      const { url } = yield* site
      const fake = yield* fakeEngines({ results: resultsFor(url) })
      const model = yield* scriptedModel((request) => ({ text: textScript(request) }))
      const layer = searchLayer(fake, modelLayer(model.baseUrl))
      // Fusion alone: /retry (brave 2nd + google 1st) beats /breaker (brave 1st only).
      const plain = yield* run({ queries: ["resilience"] }).pipe(Effect.provide(layer))
      assert.deepStrictEqual(plain.results.map((r) => r.url.slice(url.length)), ["/retry", "/breaker"])
      const reranked = yield* run({ queries: ["resilience"], rerank: true, objective: "circuit breakers" }).pipe(Effect.provide(layer))
      assert.deepStrictEqual(reranked.results.map((r) => r.url.slice(url.length)), ["/breaker", "/retry"])
      assert.isTrue(model.requests.some((r) => r.response_format?.type === "json_schema"))
      assert.isFalse(reranked.is_summarized)
    }))
})
