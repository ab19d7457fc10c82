/** The search settings: read with every other setting by AppConfig, turned into SearchSettings. */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Redacted } from "effect"
import { loadAppConfig } from "../../src/config/config.ts"
import { configuredEngineNames, defaultEngineNames, searchSettingsFromConfig } from "../../src/engines/search-config.ts"

const load = (env: Record<string, string>) => Effect.map(loadAppConfig(env), searchSettingsFromConfig)

describe("search settings", () => {
  it.effect("with nothing set: DuckDuckGo alone and the documented defaults", () =>
    Effect.gen(function*() {
      const settings = yield* load({})
      assert.deepStrictEqual(configuredEngineNames(settings), ["duckduckgo"])
      assert.deepStrictEqual(defaultEngineNames(settings), ["duckduckgo"])
      assert.strictEqual(settings.duckduckgo.baseUrl, "https://html.duckduckgo.com")
      assert.strictEqual(settings.engineTimeoutMs, 8_000)
      assert.strictEqual(settings.breakerFailures, 3)
      assert.strictEqual(settings.breakerCooldownMs, 30_000)
      assert.strictEqual(settings.summarizeTop, 5)
      assert.strictEqual(settings.concurrency, 64)
      assert.deepStrictEqual(settings.engineWeights, {})
      assert.strictEqual(settings.rrfK, 60)
    }))

  it.effect("reads each engine's key and base URL; the default set is every configured engine", () =>
    Effect.gen(function*() {
      const settings = yield* load({
        WA_SEARXNG_URL: "http://searx.local:8888/",
        WA_BRAVE_API_KEY: "bk",
        WA_GOOGLE_API_KEY: "gk",
        WA_GOOGLE_CX: "cx1",
        WA_GOOGLE_BASE_URL: "http://proxy.local/google",
        WA_TAVILY_API_KEY: "tk",
        WA_EXA_API_KEY: " ",
        WA_SEARCH_ENGINE_TIMEOUT_MS: "2500",
        WA_SEARCH_ENGINE_WEIGHTS: "brave=1.5, google:0.5, bogus=x"
      })
      assert.deepStrictEqual(defaultEngineNames(settings), ["searxng", "brave", "google", "tavily"])
      assert.deepStrictEqual(configuredEngineNames(settings), ["searxng", "brave", "google", "tavily", "duckduckgo"])
      assert.strictEqual(settings.searxng?.baseUrl, "http://searx.local:8888")
      assert.strictEqual(settings.brave?.baseUrl, "https://api.search.brave.com")
      assert.strictEqual(Redacted.value(settings.brave!.apiKey), "bk")
      assert.strictEqual(settings.google?.baseUrl, "http://proxy.local/google")
      assert.strictEqual(settings.google?.cx, "cx1")
      assert.isUndefined(settings.exa) // a blank key is "not configured"
      assert.strictEqual(settings.engineTimeoutMs, 2500)
      assert.deepStrictEqual(settings.engineWeights, { brave: 1.5, google: 0.5 })
    }))

  it.effect("Google needs both the key and the engine id (cx)", () =>
    Effect.gen(function*() {
      const settings = yield* load({ WA_GOOGLE_API_KEY: "gk" })
      assert.isUndefined(settings.google)
    }))

  it.effect("a number below 1 is the default", () =>
    Effect.gen(function*() {
      const settings = yield* load({ WA_SEARCH_CONCURRENCY: "0", WA_SEARCH_SUMMARIZE_TOP: "-2" })
      assert.strictEqual(settings.concurrency, 64)
      assert.strictEqual(settings.summarizeTop, 5)
    }))

  it.effect("a malformed number stops start-up with a line naming the variable", () =>
    Effect.gen(function*() {
      for (const name of ["WA_SEARCH_ENGINE_TIMEOUT_MS", "WA_SEARCH_BREAKER_FAILURES", "WA_SEARCH_CONCURRENCY"]) {
        const exit = yield* Effect.exit(load({ [name]: "soon" }))
        assert.isTrue(Exit.isFailure(exit))
        if (Exit.isFailure(exit)) {
          const message = String(Cause.squash(exit.cause))
          assert.include(message, "invalid configuration")
          assert.include(message, name)
        }
      }
    }))
})
