/** Settings read from the environment: forms a user types by hand are accepted. */
import { Effect, Exit } from "effect"
import { describe, expect, it } from "vitest"
import { loadAppConfig } from "../../src/config/config.ts"
import { readerSettingsFromConfig } from "../../src/reader/reader.ts"

const load = (env: Record<string, string>) => Effect.runPromise(Effect.exit(loadAppConfig(env)))

describe("WA_LOG_LEVEL", () => {
  it.each([["info", "Info"], ["warn", "Warn"], ["WARN", "Warn"], ["warning", "Warn"], ["Debug", "Debug"], ["error", "Error"]])(
    "%s is accepted as %s",
    async (raw, level) => {
      const exit = await load({ WA_LOG_LEVEL: raw })
      expect(Exit.isSuccess(exit) && exit.value.logLevel).toBe(level)
    }
  )

  it("an unknown level stops start-up with a line naming the variable", async () => {
    const exit = await load({ WA_LOG_LEVEL: "loud" })
    expect(Exit.isFailure(exit) && String(exit.cause)).toContain("WA_LOG_LEVEL must be one of")
  })
})

describe("per-project plan caps", () => {
  it.each(["WA_MAX_SESSIONS_PER_PROJECT", "WA_MAX_KEYS_PER_PROJECT", "WA_MAX_MONITORS_PER_PROJECT"])(
    "%s of 0 stops start-up with a line naming the variable; 3 is taken",
    async (name) => {
      const refused = await load({ [name]: "0" })
      expect(Exit.isFailure(refused) && String(refused.cause)).toContain(`${name} must be at least 1`)
      expect(Exit.isSuccess(await load({ [name]: "3" }))).toBe(true)
    }
  )
})

describe("runs in flight per key", () => {
  it("WA_MAX_CONCURRENT_RUNS_PER_KEY of 0 stops start-up with a line naming the variable; 3 is taken; unset is the project's cap", async () => {
    const refused = await load({ WA_MAX_CONCURRENT_RUNS_PER_KEY: "0" })
    expect(Exit.isFailure(refused) && String(refused.cause)).toContain("WA_MAX_CONCURRENT_RUNS_PER_KEY must be at least 1")
    const taken = await load({ WA_MAX_CONCURRENT_RUNS_PER_KEY: "3" })
    expect(Exit.isSuccess(taken) && taken.value.maxConcurrentRunsPerKey._tag === "Some" && taken.value.maxConcurrentRunsPerKey.value).toBe(3)
    const unset = await load({})
    expect(Exit.isSuccess(unset) && unset.value.maxConcurrentRunsPerKey._tag).toBe("None")
  })
})

describe("warm browser contexts", () => {
  it("WA_BROWSER_WARM_CONTEXTS takes 0 to 64 (default 1); outside that, start-up stops naming the variable", async () => {
    const unset = await load({})
    expect(Exit.isSuccess(unset) && unset.value.browserWarmContexts).toBe(1)
    const twenty = await load({ WA_BROWSER_WARM_CONTEXTS: "20" })
    expect(Exit.isSuccess(twenty) && twenty.value.browserWarmContexts).toBe(20)
    for (const bad of ["-1", "65"]) {
      const refused = await load({ WA_BROWSER_WARM_CONTEXTS: bad })
      expect(Exit.isFailure(refused) && String(refused.cause)).toContain("WA_BROWSER_WARM_CONTEXTS must be 0 to 64")
    }
  })
})

describe("Reader settings", () => {
  it("WA_READER_* and WA_ALLOW_PRIVATE_NETWORKS are read once by AppConfig: defaults, values, below 1 the default, malformed stops start-up naming the variable", async () => {
    const unset = await load({})
    expect(Exit.isSuccess(unset) && readerSettingsFromConfig(unset.value)).toMatchObject({
      allowPrivate: false, timeoutMs: 20_000, cacheCapacity: 256, cacheTtlMs: 900_000, maxBytes: 5_000_000
    })
    const set = await load({
      WA_ALLOW_PRIVATE_NETWORKS: "true", WA_READER_TIMEOUT_MS: "1500", WA_READER_CACHE_SIZE: "0",
      WA_READER_CACHE_TTL_SECONDS: "60", WA_READER_MAX_BYTES: "1000"
    })
    expect(Exit.isSuccess(set) && readerSettingsFromConfig(set.value)).toMatchObject({
      allowPrivate: true, timeoutMs: 1500, cacheCapacity: 256, cacheTtlMs: 60_000, maxBytes: 1000
    })
    for (const name of ["WA_READER_TIMEOUT_MS", "WA_READER_CACHE_SIZE", "WA_READER_CACHE_TTL_SECONDS", "WA_READER_MAX_BYTES"]) {
      const refused = await load({ [name]: "lots" })
      expect(Exit.isFailure(refused) && String(refused.cause)).toContain("invalid configuration")
      expect(Exit.isFailure(refused) && String(refused.cause)).toContain(name)
    }
  })
})

describe("Node flags", () => {
  it("npm start runs the service (bin/serve.js: the bundle the tests run, else the sources) with the flags the tests and benches start it with", async () => {
    const { readFile } = await import("node:fs/promises")
    const { SERVICE_NODE_FLAGS } = await import("../../src/config/node-flags.ts")
    const manifest = JSON.parse(await readFile(new URL("../../package.json", import.meta.url), "utf8")) as { scripts: Record<string, string> }
    expect(manifest.scripts["start"]).toBe(`node ${SERVICE_NODE_FLAGS.join(" ")} bin/serve.js serve`)
  })
})

describe("WA_MODEL_VISION", () => {
  it("auto by default; on, off, and true/false as on/off are taken; anything else stops start-up naming the variable", async () => {
    const unset = await load({})
    expect(Exit.isSuccess(unset) && unset.value.modelVision).toBe("auto")
    for (const [raw, value] of [["on", "on"], ["off", "off"], ["auto", "auto"], ["true", "on"], ["false", "off"]]) {
      const taken = await load({ WA_MODEL_VISION: raw! })
      expect(Exit.isSuccess(taken) && taken.value.modelVision).toBe(value)
    }
    const refused = await load({ WA_MODEL_VISION: "maybe" })
    expect(Exit.isFailure(refused) && String(refused.cause)).toContain("WA_MODEL_VISION")
  })

  it("auto decides by provider and model name", async () => {
    const { visionCapable } = await import("../../src/agent/model.ts")
    for (const name of ["gpt-4.1-mini", "gpt-4o", "gpt-5", "o4-mini", "anthropic/claude-sonnet-4.5", "google/gemini-2.5-flash", "llava:13b", "qwen2.5-vl-7b-instruct", "Qwen/Qwen2.5-VL-72B-Instruct", "llama3.2-vision", "pixtral-12b", "gemma3:27b"]) {
      expect([name, visionCapable("openai-compatible", name)]).toEqual([name, true])
    }
    for (const name of ["scripted", "gpt-3.5-turbo", "o3-mini", "llama3.1:8b", "qwen2.5-coder:7b", "mistral-7b-instruct", "gemma3:1b", "deepseek-r1"]) {
      expect([name, visionCapable("openai-compatible", name)]).toEqual([name, false])
    }
    expect(visionCapable("anthropic", "claude-sonnet-4-5")).toBe(true)
    expect(visionCapable("anthropic", "claude-3-5-haiku-latest")).toBe(true)
    expect(visionCapable("anthropic", "claude-2.1")).toBe(false)
  })
})
