/**
 * Vision with the Anthropic provider through the REST API (issue 28 §1): the real service
 * (`WA_MODEL_PROVIDER=anthropic`, `WA_MODEL=claude-sonnet-4-5`, WA_MODEL_VISION left at auto, which
 * is on for Claude) driven by the scripted Messages server. A session created over HTTP navigates
 * to a fixture page; the model's next request carries the observation with one base64 JPEG image
 * block, the run ends done, and its tokens (the run.usage events) and cost (GET run
 * `llm_cost_usd`, at the shipped price of the model) count the image: estimated when the server
 * reports no usage, as reported otherwise.
 *
 * The JPEG's size is read by the test's own parser (its SOF segment), not by our code.
 */
import { readFileSync } from "node:fs"
import { afterAll, beforeAll, expect, it } from "vitest"
import { imageBlocks, lastUserBlocksText, type ScriptedAnthropic, startScriptedAnthropic } from "../fixtures/model/scripted-anthropic.ts"
import { type FixtureSites, startFixtureSites } from "../fixtures/sites/server.ts"
import { TERMINAL, waitForRunStatus } from "../support/runs.ts"
import { type Service, startService, stopAndClean } from "../support/service.ts"
import { readSse } from "../support/sse.ts"

let anthropic: ScriptedAnthropic
let site: FixtureSites
let service: Service

beforeAll(async () => {
  anthropic = await startScriptedAnthropic()
  site = await startFixtureSites()
  service = await startService({
    env: {
      WA_MODEL_PROVIDER: "anthropic",
      WA_MODEL_BASE_URL: anthropic.baseUrl,
      WA_MODEL: "claude-sonnet-4-5",
      // The fixture page is on loopback.
      WA_ALLOW_PRIVATE_NETWORKS: "true"
    }
  })
}, 120_000)
afterAll(async () => {
  await stopAndClean(service)
  await site?.close()
  await anthropic?.close()
})

const sessionsPath = () => `/v1/projects/${service.projectId}/do_anything/sessions`

/** The shipped price of the model (config/prices.json), USD per million tokens. */
const price = (JSON.parse(readFileSync(new URL("../../config/prices.json", import.meta.url), "utf8")) as {
  models: Record<string, { input_per_mtok: number; output_per_mtok: number }>
}).models["claude-sonnet-4-5"]!

/** Width and height of a baseline or progressive JPEG, from its first SOF segment. */
const jpegSize = (bytes: Buffer): { width: number; height: number } => {
  expect([bytes[0], bytes[1]]).toEqual([0xff, 0xd8])
  let at = 2
  while (at + 9 < bytes.length) {
    expect(bytes[at]).toBe(0xff)
    const marker = bytes[at + 1]!
    if (marker >= 0xc0 && marker <= 0xc3) return { height: bytes.readUInt16BE(at + 5), width: bytes.readUInt16BE(at + 7) }
    at += 2 + bytes.readUInt16BE(at + 2)
  }
  throw new Error("no SOF segment in the JPEG")
}

/** Creates a session over HTTP with one run of `instructions`; the run once it has ended, and its path. */
const runToEnd = async (instructions: string) => {
  const created = await service.request("POST", sessionsPath(), { body: { keep_alive: false, instructions } })
  expect(created.status, created.text).toBe(201)
  const runPath = `${sessionsPath()}/${created.json.id}/runs/${created.json.latest_run_id}`
  const run = await waitForRunStatus(service, runPath, TERMINAL, { timeoutMs: 90_000, everyMs: 200 })
  return { run, runPath }
}

/** The run.usage events of a run, in step order. */
const usageOf = async (runPath: string) =>
  (await readSse(`${service.url}${runPath}/events`, { authorization: `Bearer ${service.apiKey}` })).events
    .filter((e) => e.event === "run.usage")
    .map((e) => e.data.data as { step: number; input_tokens: number; output_tokens: number })

const costOf = (usage: ReadonlyArray<{ input_tokens: number; output_tokens: number }>) =>
  usage.reduce((sum, u) => sum + (u.input_tokens * price.input_per_mtok + u.output_tokens * price.output_per_mtok) / 1e6, 0)

it("the observation after a navigation carries one base64 JPEG image block; without reported usage the run is charged an estimate that counts the image", async () => {
  anthropic.setScript((_request, turn) =>
    turn === 0 ? { tool: "navigate", args: { url: `${site.url}/page/1` } } : { tool: "done", args: { output: { ok: true } } }, { usage: false })
  const before = anthropic.requests.length
  const { run, runPath } = await runToEnd("Look at page one")
  expect(run.status, JSON.stringify(run.error)).toBe("done")
  expect(run.output).toEqual({ ok: true })

  const requests = anthropic.requests.slice(before)
  expect(requests.length).toBe(2)
  // A blank tab first: no image.
  expect(imageBlocks(requests[0]!)).toEqual([])
  const second = requests[1]!
  const blocks = imageBlocks(second)
  expect(blocks.length).toBe(1)
  // In the newest message, with the observation of the page.
  expect(blocks[0]!.message).toBe(second.messages.length - 1)
  expect(blocks[0]!.source).toMatchObject({ type: "base64", media_type: "image/jpeg" })
  const text = lastUserBlocksText(second)
  expect(text).toContain("Page 1")
  expect(text).toContain("Screenshot of the viewport attached")
  const size = jpegSize(Buffer.from(blocks[0]!.source.data, "base64"))
  expect(size.width).toBeGreaterThan(0)
  expect(size.width).toBeLessThanOrEqual(1280)

  // No usage reported: each step is charged an estimate, and the image step's includes
  // ceil(w*h/750) image tokens (at most 1 600) on top of its text.
  const usage = await usageOf(runPath)
  expect(usage.map((u) => u.step)).toEqual([1, 2])
  const imageTokens = Math.min(1600, Math.ceil((size.width * size.height) / 750))
  expect(usage[1]!.input_tokens - usage[0]!.input_tokens).toBeGreaterThanOrEqual(imageTokens)
  // The image outweighs everything the step's request says in text but the tool definitions
  // (which the estimate does not count): its share is not text.
  const textChars = JSON.stringify({ system: second.system, messages: second.messages }).length - blocks[0]!.source.data.length
  expect(usage[1]!.input_tokens).toBeGreaterThan(Math.ceil(textChars / 4))
  // The run's cost is those tokens at the model's price.
  expect(Number(run.llm_cost_usd)).toBeGreaterThan(0)
  expect(Number(run.llm_cost_usd)).toBeCloseTo(costOf(usage), 5)
})

it("with reported usage the run is charged what the server reports (its count includes the image)", async () => {
  anthropic.setScript((_request, turn) =>
    turn === 0 ? { tool: "navigate", args: { url: `${site.url}/page/2` } } : { tool: "done", args: { output: { ok: true } } })
  const before = anthropic.requests.length
  const { run, runPath } = await runToEnd("Look at page two")
  expect(run.status, JSON.stringify(run.error)).toBe("done")
  expect(imageBlocks(anthropic.requests[before + 1]!).length).toBe(1)
  // The scripted server reports 3 000 input and 100 output tokens per call.
  const usage = await usageOf(runPath)
  expect(usage).toEqual([{ step: 1, input_tokens: 3000, output_tokens: 100 }, { step: 2, input_tokens: 3000, output_tokens: 100 }])
  expect(Number(run.llm_cost_usd)).toBeCloseTo(costOf(usage), 5)
})
