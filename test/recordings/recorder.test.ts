/**
 * The rrweb recorder on its own, in a real Chromium: what a recording holds, pausing with
 * setCapturing, the active-tab rule and the size bound.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { randomBytes } from "node:crypto"
import { gunzipSync } from "node:zlib"
import { navigate } from "../../src/browser/actions.ts"
import type { ContextLease } from "../../src/browser/pool.ts"
import { ContextRecorder, RECORDING_FORMAT, type RunRecording } from "../../src/recordings/recorder.ts"
import { leaseAndSite, TestLayer } from "../browser/support.ts"
import type { RunId } from "../../src/domain/run.ts"

interface Event {
  readonly type: number
  readonly timestamp: number
  readonly data: { readonly source?: number } & Record<string, unknown>
}

const decode = (data: Uint8Array) =>
  JSON.parse(gunzipSync(data).toString("utf8")) as {
    format: string
    run_id: string
    events: Array<Event>
    event_count: number
    truncated: boolean
  }

const FULL_SNAPSHOT = 2
const INCREMENTAL = 3
const MUTATION = 0

/** Incremental DOM mutations whose JSON mentions `text`. */
const mutationsWith = (events: ReadonlyArray<Event>, text: string) =>
  events.filter((e) => e.type === INCREMENTAL && e.data.source === MUTATION && JSON.stringify(e.data).includes(text))

/** Adds a paragraph with `text` to the active page and makes the page hand its events over now. */
const addLine = (lease: ContextLease, text: string) =>
  Effect.promise(async () => {
    const page = lease.page()!
    await page.evaluate((line) => {
      const p = document.createElement("p")
      p.textContent = line
      document.body.appendChild(p)
    }, text)
    // rrweb reports mutations in a microtask; then the batch is sent and processed before this resolves.
    await page.evaluate(() => new Promise((resolve) => setTimeout(resolve, 0)))
    await page.evaluate(() => (window as unknown as { __waRecorder: { flush: () => Promise<void> } }).__waRecorder.flush())
  })

const begin = (lease: ContextLease, maxBytes = 10 * 1024 * 1024) =>
  Effect.promise(async () => {
    const recorder = await ContextRecorder.install(lease.context)
    const recording = await recorder.begin("run_test" as RunId, { quality: "medium", captureDuringTakeControl: false }, lease, maxBytes)
    return { recorder, recording }
  })

const end = (recorder: ContextRecorder, recording: RunRecording) => Effect.promise(() => recorder.end(recording))

layer(TestLayer, { excludeTestServices: true })("recorder", (it) => {
  it.effect("records the pages a context visits as gzip JSON with rrweb events", () =>
    Effect.gen(function*() {
      const { lease, site } = yield* leaseAndSite
      const { recorder, recording } = yield* begin(lease)
      yield* navigate(lease, `${site.url}/recorded`)
      yield* addLine(lease, "first recorded line")
      const result = yield* end(recorder, recording)
      const recorded = decode(result.data)
      assert.strictEqual(recorded.format, RECORDING_FORMAT)
      assert.strictEqual(recorded.run_id, "run_test")
      assert.strictEqual(recorded.events.length, result.eventCount)
      assert.strictEqual(recorded.event_count, result.eventCount)
      assert.isFalse(recorded.truncated)
      // The timeline starts with a Meta event (the replayer needs it first).
      assert.strictEqual(recorded.events[0]!.type, 4)
      const snapshots = recorded.events.filter((e) => e.type === FULL_SNAPSHOT)
      assert.isTrue(snapshots.some((e) => JSON.stringify(e.data).includes("zebra-quartz-7")))
      assert.lengthOf(mutationsWith(recorded.events, "first recorded line"), 1)
    }))

  it.effect("setCapturing(false) drops events until capture resumes from a fresh full snapshot", () =>
    Effect.gen(function*() {
      const { lease, site } = yield* leaseAndSite
      const { recorder, recording } = yield* begin(lease)
      yield* navigate(lease, `${site.url}/recorded`)
      yield* addLine(lease, "before the pause")
      const countBefore = recording.eventCount

      recording.setCapturing(false)
      assert.isFalse(recording.capturing)
      yield* addLine(lease, "typed while a person controls the page")
      assert.strictEqual(recording.eventCount, countBefore)

      recording.setCapturing(true)
      // Resuming asks the page for a full snapshot; wait until it is in (the timeline needs it).
      yield* Effect.promise(async () => {
        while (recording.eventCount === countBefore) await lease.page()!.evaluate(() => new Promise((r) => setTimeout(r, 50)))
      })
      yield* addLine(lease, "after the pause")
      const recorded = decode((yield* end(recorder, recording)).data)

      assert.lengthOf(mutationsWith(recorded.events, "before the pause"), 1)
      assert.lengthOf(mutationsWith(recorded.events, "after the pause"), 1)
      // The paused change is in no incremental event; the snapshot taken at resume shows its result.
      assert.lengthOf(mutationsWith(recorded.events, "typed while a person controls the page"), 0)
      const resumed = recorded.events.findIndex((e, i) => i > 0 && e.type === 4)
      assert.isAbove(resumed, 0)
      assert.strictEqual(recorded.events[resumed + 1]!.type, FULL_SNAPSHOT)
      assert.include(JSON.stringify(recorded.events[resumed + 1]!.data), "typed while a person controls the page")
    }))

  it.effect("keeps only the agent's active tab", () =>
    Effect.gen(function*() {
      const { lease, site } = yield* leaseAndSite
      const { recorder, recording } = yield* begin(lease)
      yield* navigate(lease, `${site.url}/recorded`)
      const active = lease.page()!
      const other = yield* Effect.promise(async () => {
        const page = await lease.context.newPage()
        await page.goto(`${site.url}/page/2`)
        return page
      })
      lease.setActivePage(active)
      yield* Effect.promise(async () => {
        await other.evaluate(() => {
          const p = document.createElement("p")
          p.textContent = "line in a background tab"
          document.body.appendChild(p)
        })
        await other.evaluate(() => new Promise((resolve) => setTimeout(resolve, 0)))
        await other.evaluate(() => (window as unknown as { __waRecorder: { flush: () => Promise<void> } }).__waRecorder.flush())
      })
      yield* addLine(lease, "line in the active tab")
      const recorded = decode((yield* end(recorder, recording)).data)
      assert.lengthOf(mutationsWith(recorded.events, "line in the active tab"), 1)
      assert.lengthOf(mutationsWith(recorded.events, "line in a background tab"), 0)
      assert.isFalse(recorded.events.some((e) => e.type === FULL_SNAPSHOT && JSON.stringify(e.data).includes("Page 2")))
    }))

  it.effect("stops taking events before the compressed size would pass the limit", () =>
    Effect.gen(function*() {
      const { lease, site } = yield* leaseAndSite
      const { recorder, recording } = yield* begin(lease, 8 * 1024)
      yield* navigate(lease, `${site.url}/recorded`)
      // Random text hardly compresses: 20 lines of 1500 characters pass 8 KiB compressed.
      for (let i = 0; i < 20; i++) yield* addLine(lease, `line ${i} ${randomBytes(1100).toString("base64")}`)
      const result = yield* end(recorder, recording)
      assert.isTrue(result.truncated)
      assert.isAtMost(result.data.length, 8 * 1024)
      const recorded = decode(result.data)
      assert.isTrue(recorded.truncated)
      assert.strictEqual(recorded.events.length, result.eventCount)
    }))
})
