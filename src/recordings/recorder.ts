/**
 * DOM recording of DoAnything runs with rrweb.
 *
 * The recorder is installed once into a session's browser context: an init script (the rrweb
 * bundle and a small driver) runs in the top frame of every document, and a binding carries the
 * page's events to this process in batches (every 500 ms, at each full snapshot and when the page
 * is hidden). A new document asks the binding whether a run is being recorded and with which
 * options, so recording follows navigations and new tabs; a run's recording starts when the run
 * starts and stops when it ends (the session's next run may record again, or not).
 *
 * One timeline per run: only the events of the agent's active tab are kept. When the active tab
 * changes, or capture resumes after a pause, the page is asked for a fresh full snapshot and
 * events are dropped until it arrives, so the replay never applies changes to a DOM it has not
 * seen. Events are written as they arrive into a gzip stream (the recording never sits
 * uncompressed in memory) and stop being accepted once the compressed size would pass the limit
 * (`truncated` then says so).
 *
 * Pausing: `RunRecording.setCapturing(false)` drops every event until `setCapturing(true)`; take
 * control calls `RunRecorders.personInControl(runId, true | false)`, which pauses only when the
 * run asked for `capture_during_take_control: false`.
 */
import { Context, Effect, Layer } from "effect"
import type { BrowserContext, Page } from "playwright-core"
import * as zlib from "node:zlib"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../config/config.ts"
import type { ContextLease } from "../browser/pool.ts"
import { type ArtifactRow, ArtifactStore } from "../store/artifacts.ts"
import { rrwebAssets } from "./rrweb-assets.ts"
import { type RecordingSettings, rrwebRecordOptions } from "./settings.ts"
import { withMethodSpans } from "../observability/spans.ts"
import type { RunId } from "../domain/run.ts"

/** The artifact a run's recording is stored as (JSON `{format, run_id, events, ...}`, gzip). */
export const RECORDING_ARTIFACT_NAME = "recording.json"
export const RECORDING_FORMAT = "rrweb/2"

const BINDING = "__waRecordingSend"
/** rrweb event types this module looks at. */
const META = 4

/** The script run at the start of every document (top frame only, http(s) pages only). */
const pageScript = (bundle: string) => `(() => {
  if (window.top !== window || window.__waRecorder !== undefined) return;
  if (location.protocol !== "http:" && location.protocol !== "https:") return;
  const send = window.${BINDING};
  if (typeof send !== "function") return;
  const rrweb = (function () { var module = { exports: {} }; var exports = module.exports; var define = undefined;
${bundle}
  ; return module.exports; })();
  let stopRecording = null;
  let buffer = [];
  let timer = null;
  const flush = () => {
    if (buffer.length === 0) return Promise.resolve();
    const batch = JSON.stringify(buffer);
    buffer = [];
    try { return Promise.resolve(send(batch)).catch(() => undefined); } catch (e) { return Promise.resolve(); }
  };
  const start = (options) => {
    if (stopRecording !== null || options === null || typeof options !== "object") return;
    stopRecording = rrweb.record(Object.assign({}, options, {
      emit: (event) => { buffer.push(event); if (event.type === 2 || buffer.length >= 100) flush(); }
    })) || null;
    timer = setInterval(flush, 500);
  };
  const stop = () => {
    const flushed = flush();
    if (stopRecording !== null) stopRecording();
    stopRecording = null;
    if (timer !== null) clearInterval(timer);
    timer = null;
    return flushed;
  };
  const checkout = (options) => {
    if (stopRecording === null) start(options); else rrweb.record.takeFullSnapshot(true);
    return flush();
  };
  Object.defineProperty(window, "__waRecorder", { value: { start, stop, flush, checkout }, configurable: false, enumerable: false, writable: false });
  addEventListener("pagehide", () => { flush(); });
  Promise.resolve(send(null)).then(start, () => undefined);
})();`

const isRecordable = (page: Page) => /^https?:/.test(page.url())

/** What a finished recording holds. */
export interface RecordingResult {
  readonly data: Uint8Array
  readonly eventCount: number
  readonly truncated: boolean
}

/** An rrweb event as far as this module checks it. */
const isEvent = (value: unknown): value is { readonly type: number; readonly timestamp: number } =>
  typeof value === "object" && value !== null && typeof (value as { type?: unknown }).type === "number" &&
  typeof (value as { timestamp?: unknown }).timestamp === "number"

/**
 * A JSON document written into a gzip stream piece by piece; every write is flushed, so the
 * compressed size is known exactly after each one. Writes run one at a time, in order.
 */
class GzipJsonWriter {
  private readonly gzip = zlib.createGzip({ level: 6 })
  private readonly chunks: Array<Buffer> = []
  private bytes = 0
  private queue: Promise<void> = Promise.resolve()
  private readonly ended: Promise<void>

  constructor() {
    this.gzip.on("data", (chunk: Buffer) => {
      this.chunks.push(chunk)
      this.bytes += chunk.length
    })
    this.ended = new Promise((resolve) => this.gzip.once("end", resolve))
  }

  get compressedBytes(): number {
    return this.bytes
  }

  /** Runs `f` after the writes queued before it; `f` may call `write`. */
  enqueue(f: () => Promise<void> | void): Promise<void> {
    this.queue = this.queue.then(f).catch(() => undefined)
    return this.queue
  }

  /** Writes (inside an enqueued function) and waits until the bytes are compressed. */
  write(text: string): Promise<void> {
    return new Promise((resolve) => {
      this.gzip.write(text)
      this.gzip.flush(zlib.constants.Z_SYNC_FLUSH, () => resolve())
    })
  }

  async end(suffix: string): Promise<Buffer> {
    await this.queue
    this.gzip.end(suffix)
    await this.ended
    return Buffer.concat(this.chunks)
  }
}

/** The recording of one run in one browser context. */
export class RunRecording {
  readonly options: Record<string, unknown>
  private capturingNow = true
  /** The page whose events make the timeline now. */
  private currentPage: Page | undefined
  /** Set when the next accepted events must start with a full snapshot (new tab, resumed capture). */
  private needSnapshot = true
  private readonly checkoutsAsked = new WeakSet<Page>()
  private readonly writer = new GzipJsonWriter()
  private events = 0
  private truncatedNow = false
  private stopped = false

  readonly runId: RunId
  readonly settings: RecordingSettings
  readonly lease: ContextLease
  /** The most compressed bytes the recording may hold. */
  private readonly maxBytes: number

  constructor(runId: RunId, settings: RecordingSettings, lease: ContextLease, maxBytes: number) {
    this.runId = runId
    this.settings = settings
    this.lease = lease
    this.maxBytes = maxBytes
    this.options = rrwebRecordOptions(settings.quality)
    void this.writer.enqueue(() => this.writer.write(`{"format":${JSON.stringify(RECORDING_FORMAT)},"run_id":${JSON.stringify(runId)},"events":[`))
  }

  get capturing(): boolean {
    return this.capturingNow
  }

  get eventCount(): number {
    return this.events
  }

  get truncated(): boolean {
    return this.truncatedNow
  }

  /**
   * Turns capture off (events arriving meanwhile are dropped) or back on. Back on, the active page
   * is asked for a full snapshot and the timeline goes on from it.
   */
  setCapturing(capturing: boolean): void {
    if (capturing === this.capturingNow) return
    this.capturingNow = capturing
    if (!capturing) return
    this.needSnapshot = true
    const page = this.lease.page()
    if (page !== undefined) this.askCheckout(page, true)
  }

  /** Events of one batch from `page` (JSON text of an array), as the binding received them. */
  receive(page: Page, batch: string): Promise<void> {
    if (this.stopped || !this.capturingNow || this.truncatedNow) return Promise.resolve()
    if (page !== this.lease.page()) return Promise.resolve()
    let parsed: unknown
    try {
      parsed = JSON.parse(batch)
    } catch {
      return Promise.resolve()
    }
    if (!Array.isArray(parsed)) return Promise.resolve()
    let events = parsed.filter(isEvent)
    if (page !== this.currentPage || this.needSnapshot) {
      const meta = events.findIndex((event) => event.type === META)
      if (meta === -1) {
        this.askCheckout(page, false)
        return Promise.resolve()
      }
      events = events.slice(meta)
      this.currentPage = page
      this.needSnapshot = false
    }
    if (events.length === 0) return Promise.resolve()
    const text = events.map((event) => JSON.stringify(event)).join(",")
    return this.writer.enqueue(async () => {
      if (this.truncatedNow) return
      // The uncompressed length bounds what this batch can add (gzip never grows text like this
      // by more than its small framing), so the limit holds before the batch is written.
      if (this.writer.compressedBytes + Buffer.byteLength(text) + 1024 > this.maxBytes) {
        this.truncatedNow = true
        return
      }
      await this.writer.write(this.events === 0 ? text : `,${text}`)
      this.events += events.length
    })
  }

  /** Asks a page for a full snapshot (starting its recorder when it has none running). */
  private askCheckout(page: Page, again: boolean): void {
    if (!again && this.checkoutsAsked.has(page)) return
    this.checkoutsAsked.add(page)
    void installInPage(page).then(() =>
      page.evaluate((options) => (window as unknown as { __waRecorder?: { checkout: (o: unknown) => Promise<void> } }).__waRecorder?.checkout(options), this.options)
    ).catch(() => undefined)
  }

  /** Flushes and stops the recorders of the context's pages, then closes the document. */
  async stop(): Promise<RecordingResult> {
    await Promise.all(this.lease.pages().map((page) =>
      withTimeout(page.evaluate(() => (window as unknown as { __waRecorder?: { stop: () => Promise<void> } }).__waRecorder?.stop()), 5_000).catch(() => undefined)
    ))
    this.stopped = true
    const data = await this.writer.end(`],"event_count":${this.events},"truncated":${this.truncatedNow}}`)
    return { data: new Uint8Array(data), eventCount: this.events, truncated: this.truncatedNow }
  }
}

const withTimeout = <A>(promise: Promise<A>, ms: number): Promise<A | undefined> => {
  let timer: NodeJS.Timeout | undefined
  return Promise.race([promise, new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms)))]).finally(() => clearTimeout(timer))
}

/** Runs the page script in a page already open when the recorder was installed (it is a no-op where it already ran). */
const installInPage = (page: Page): Promise<void> =>
  isRecordable(page) ? page.evaluate(pageScript(rrwebAssets().script)).then(() => undefined) : Promise.resolve()

/**
 * The recorder installed in one browser context (the binding and the init script, which cannot be
 * removed again): its pages feed the recording of the run under way, if any.
 */
export class ContextRecorder {
  private active: RunRecording | undefined

  /** Installs the recorder into a context (once per context: the caller keeps the instance). */
  static async install(context: BrowserContext): Promise<ContextRecorder> {
    const recorder = new ContextRecorder()
    await context.exposeBinding(BINDING, ({ page }, batch: unknown) => recorder.onBinding(page, batch))
    await context.addInitScript(pageScript(rrwebAssets().script))
    return recorder
  }

  private onBinding(page: Page, batch: unknown): unknown {
    const active = this.active
    if (active === undefined) return null
    // A new document asks whether to record, and how.
    if (batch === null) return active.options
    return typeof batch === "string" ? active.receive(page, batch).then(() => null) : null
  }

  /** Starts recording a run: pages open already are snapshotted now, later documents as they load. */
  async begin(runId: RunId, settings: RecordingSettings, lease: ContextLease, maxBytes: number): Promise<RunRecording> {
    const recording = new RunRecording(runId, settings, lease, maxBytes)
    this.active = recording
    await Promise.all(lease.pages().filter(isRecordable).map((page) =>
      installInPage(page)
        .then(() => page.evaluate((options) => (window as unknown as { __waRecorder?: { checkout: (o: unknown) => Promise<void> } }).__waRecorder?.checkout(options), recording.options))
        .catch(() => undefined)
    ))
    return recording
  }

  /** Stops a recording (flushing what the pages still hold) and returns the compressed document. */
  async end(recording: RunRecording): Promise<RecordingResult> {
    const result = await recording.stop()
    if (this.active === recording) this.active = undefined
    return result
  }
}

export class RunRecorders extends Context.Service<RunRecorders, {
  /**
   * Starts recording a run in the lease's context (nothing when `settings` is undefined). A
   * failure to install is logged and the run goes on unrecorded.
   */
  readonly start: (runId: RunId, lease: ContextLease, settings: RecordingSettings | undefined) => Effect.Effect<RunRecording | undefined>
  /** The recording of a run under way on this runner. */
  readonly current: (runId: RunId) => Effect.Effect<RunRecording | undefined>
  /** Pauses (false) or resumes (true) a run's recording; nothing when the run is not recorded here. */
  readonly setCapturing: (runId: RunId, capturing: boolean) => Effect.Effect<void>
  /**
   * Take control: a person took (true) or released (false) the run's page. Pauses the recording
   * for that time when the run asked for `capture_during_take_control: false`.
   */
  readonly personInControl: (runId: RunId, inControl: boolean) => Effect.Effect<void>
  /** Stops the run's recording and stores it as the run's artifact (none when no event was kept). */
  readonly finish: (runId: RunId) => Effect.Effect<ArtifactRow | undefined>
  /** Stops the run's recording and keeps nothing (this runner no longer executes the run). */
  readonly discard: (runId: RunId) => Effect.Effect<void>
}>()("wa/recordings/RunRecorders") {
  static readonly layer: Layer.Layer<RunRecorders, never, AppConfig | ArtifactStore> = Layer.effect(
    RunRecorders,
    Effect.gen(function*() {
      const config = yield* AppConfig
      const artifacts = yield* ArtifactStore
      const installations = new WeakMap<BrowserContext, Promise<ContextRecorder>>()
      const recordings = new Map<string, { readonly recording: RunRecording; readonly recorder: ContextRecorder }>()

      const install = (context: BrowserContext): Promise<ContextRecorder> => {
        const existing = installations.get(context)
        if (existing !== undefined) return existing
        const installing = ContextRecorder.install(context)
        installations.set(context, installing)
        installing.catch(() => installations.delete(context))
        return installing
      }

      const stopOf = (runId: RunId) =>
        Effect.suspend(() => {
          const entry = recordings.get(runId)
          if (entry === undefined) return Effect.succeed(undefined)
          recordings.delete(runId)
          return Effect.promise(() => entry.recorder.end(entry.recording))
        })

      return RunRecorders.of(withMethodSpans("RunRecorders", {
        start: (runId, lease, settings) =>
          settings === undefined ? Effect.succeed(undefined) : Effect.tryPromise(async () => {
            const recorder = await install(lease.context)
            const recording = await recorder.begin(runId, settings, lease, config.recordingMaxBytes)
            recordings.set(runId, { recording, recorder })
            return recording
          }).pipe(
            Effect.catchCause((cause) => Effect.as(Effect.logWarning("could not start the run's recording; the run goes on unrecorded", cause), undefined)),
            Effect.annotateLogs({ run_id: runId })
          ),
        current: (runId) => Effect.sync(() => recordings.get(runId)?.recording),
        setCapturing: (runId, capturing) => Effect.sync(() => recordings.get(runId)?.recording.setCapturing(capturing)),
        personInControl: (runId, inControl) =>
          Effect.sync(() => {
            const recording = recordings.get(runId)?.recording
            if (recording !== undefined && !recording.settings.captureDuringTakeControl) recording.setCapturing(!inControl)
          }),
        finish: (runId) =>
          stopOf(runId).pipe(
            Effect.flatMap((result) =>
              result === undefined || result.eventCount === 0
                ? Effect.succeed(undefined)
                : artifacts.putBinary(runId, { name: RECORDING_ARTIFACT_NAME, contentType: "application/json", contentEncoding: "gzip", data: result.data })
            ),
            Effect.tap((row) => row === undefined ? Effect.void : Effect.logInfo("run recording stored").pipe(Effect.annotateLogs({ artifact_id: row.id, size_bytes: row.size_bytes }))),
            Effect.catchCause((cause) => Effect.as(Effect.logWarning("could not store the run's recording", cause), undefined)),
            Effect.annotateLogs({ run_id: runId })
          ),
        discard: (runId) => stopOf(runId).pipe(Effect.asVoid, Effect.catchCause(() => Effect.void))
      }))
    })
  )

  /**
   * The layer with its store: one instance per process (provide this same value wherever the
   * recorders are needed, e.g. take control, so everyone holds the same recordings).
   */
  static readonly live: Layer.Layer<RunRecorders, never, AppConfig | SqlClient.SqlClient> = RunRecorders.layer.pipe(Layer.provide(ArtifactStore.layer))
}
