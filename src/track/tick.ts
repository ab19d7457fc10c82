/**
 * One tick of a monitor: read the target pages (or search the intent when it has none), extract
 * (JSON with the model when the monitor has an `extraction_schema`, a text fingerprint
 * otherwise), compare with the previous snapshot, evaluate the trigger and stop rules, store the
 * snapshot with its diff, and notify on the monitor's channel when the trigger fired.
 *
 * Decisions (README "Track"):
 * - A tick whose pages do not all read fails as a whole (no snapshot): a page that is down for a
 *   minute must not look like a change twice.
 * - The fingerprint is of the normalized text with date-like noise masked (clocks, "3 minutes
 *   ago"), so a page's clock is not a change. With extraction, the hash is of the extracted JSON.
 * - Search-only ticks (no target_urls) search the intent; the snapshot is the result set (title
 *   and URL per result), extracted as `{results: [{title, url}]}`, so rules can look at it.
 * - A fired tick's notification is queued in the transaction that records the tick's outcome
 *   (MonitorStore.completeTick), its `monitor.notification.queued` event before the change to
 *   `completed` of a tick that meets the stop condition: a client following the monitor's events
 *   sees it before its stream ends. Notification is idempotent per (tick, type): a tick recorded
 *   without its notification (by a version that queued it after the outcome, when the runner died
 *   in between) records it when its message is delivered again.
 */
import { Data, Effect, Layer, Option, Result, Schema } from "effect"
import { createHash } from "node:crypto"
import { AgentModel } from "../agent/model.ts"
import { AppConfig } from "../config/config.ts"
import { Budget } from "../billing/budget.ts"
import { isTerminalMonitor, type Monitor, type MonitorDiff, MonitorId, type PageResult, type Snapshot, SnapshotId, type TickRun } from "../domain/monitor.ts"
import { DeliveryId } from "../domain/id-schemas.ts"
import type { Run, TrackTickRequest } from "../domain/run.ts"
import type { Begin, RunExecutor } from "../runs/kernel.ts"
import { Reader } from "../reader/reader.ts"
import { BrowserPool } from "../browser/pool.ts"
import { readPagesAsProfile } from "../profiles/profile-pages.ts"
import { ProfileStore } from "../profiles/profile-store.ts"
import { Schedules } from "../schedules/schedules.ts"
import { decodeWebSearchRequest } from "../domain/web-search.ts"
import { WebSearch } from "../engines/web-search.ts"
import { NotificationChannels } from "../webhooks/notification-channels.ts"
import { diffJson, diffText, textChangeSummary } from "./diff.ts"
import { ExtractionFailed, extractStructured } from "./extraction.ts"
import { normalizeText } from "./fingerprint.ts"
import { MonitorStore, type PreviousSnapshot, type TickRef } from "./monitor-store.ts"
import { DEFAULT_TRIGGER, parseStopCondition, parseTrigger, type Rule } from "../domain/track-rules.ts"
import { evaluate } from "./rules.ts"
import type { MonitorTriggeredData } from "../domain/wire/webhook-payloads.ts"

/** Text kept in a snapshot (and diffed), at most. */
const MAX_SNAPSHOT_TEXT = 200_000
/** Pages of one tick read at the same time. */
const PAGE_CONCURRENCY = 4

export const MONITOR_OWNER = "monitor"

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex")

/** JSON with sorted keys, so equal objects hash equally. */
const stableJson = (value: unknown): string =>
  value === null || typeof value !== "object"
    ? JSON.stringify(value) ?? "null"
    : Array.isArray(value)
    ? `[${value.map(stableJson).join(",")}]`
    : `{${Object.keys(value).sort().map((key) => `${JSON.stringify(key)}:${stableJson((value as Record<string, unknown>)[key])}`).join(",")}}`

const ruleOf = (input: Record<string, unknown> | null, parse: typeof parseTrigger, fallback: Rule | null): Rule | null => {
  if (input === null) return fallback
  const parsed = parse(input)
  // Rules were validated when they were set; one that no longer parses is treated as absent.
  return Result.isSuccess(parsed) ? parsed.success : fallback
}

/** The data of a monitor's notification (`monitor.triggered`, src/domain/wire/webhook-payloads.ts). */
export const notificationData = (monitor: Monitor, tick: Pick<TickRun, "id" | "n">, snapshot: Snapshot): MonitorTriggeredData => ({
  monitor_id: monitor.id,
  run_id: tick.id,
  tick_n: tick.n,
  intent: monitor.intent_text,
  snapshot_id: snapshot.id,
  changed: snapshot.changed,
  extracted: snapshot.extracted,
  diff: snapshot.diff,
  target_urls: monitor.target_urls,
  fetched_at: snapshot.fetched_at.toISOString()
})

interface Observation {
  readonly text: string
  readonly extracted: unknown | null
  readonly pages: ReadonlyArray<PageResult>
  readonly costUsd: number
}

class TickFailed extends Data.TaggedError("TickFailed")<{
  readonly code: string
  readonly detail: string
  readonly pages: ReadonlyArray<PageResult>
  readonly costUsd: number
}> {}

/** What a tick's start gives its work: the tick as numbered, and what it compares with. */
interface StartedTick {
  readonly tick: TickRef
  readonly previous: PreviousSnapshot | undefined
}

/**
 * What the executor is asked to run: the tick's request, and its monitor when the caller read it
 * just before (a `Fire` read it to make the slot's tick), so it is not read again.
 */
interface TickRequest {
  readonly tick: TrackTickRequest
  readonly monitor?: Monitor
}

/** A tick's request when the run is a tick (kind track_tick). */
const tickRequestOf = (run: Run): TickRequest | undefined => run.request._tag === "TrackTick" ? { tick: run.request } : undefined

/** What a tick run's `output` holds of what its executor reads (startTick and completeTick write it). */
const TickOutput = Schema.Struct({
  n: Schema.optional(Schema.Int),
  fired: Schema.optional(Schema.Boolean),
  snapshot_id: Schema.optional(SnapshotId),
  /** The notification's delivery, when it was queued with the tick's outcome. */
  delivery_id: Schema.optional(Schema.NullOr(DeliveryId))
})
const decodeTickOutput = Schema.decodeUnknownOption(TickOutput)
/** The tick run's output, decoded; empty when it holds nothing of that (a tick not yet started). */
const tickOutput = (run: Run): typeof TickOutput.Type => Option.getOrElse(decodeTickOutput(run.output ?? {}), () => ({}))

/** The tick as its start and ends write it, read from its run. */
const tickOf = (run: Run, request: TrackTickRequest): TickRef => {
  const { n } = tickOutput(run)
  return {
    id: run.id,
    monitor_id: request.monitor_id,
    project_id: run.project_id,
    n: n ?? null,
    trigger: request.trigger,
    slot_at: request.slot_at === null ? null : new Date(request.slot_at),
    started_at: run.started_at
  }
}

/**
 * Track's tick as a run executor (src/runs/kernel.ts): the Monitor entity executes each tick run
 * through the run kernel's one lifecycle (claim, start, the fiber, the one end, the superseded
 * rule), as the other products' entities execute their runs. A tick reports to its monitor's log,
 * not its own, so the executor records its start (`startTick`: numbered, `monitor.tick.started`)
 * and the kernel's end of it (a failure: `failTick`, code internal_error) itself (`record`); the
 * tick's own ends (done, failed with what its pages said, skipped) are its work's. Gives the
 * executor and `slotTick`, which makes a schedule slot's tick run for a `Fire`.
 */
export const makeTickExecutor = Effect.gen(function*() {
  const store = yield* MonitorStore
  const reader = yield* Reader
  const webSearch = yield* WebSearch
  const model = yield* AgentModel
  const channels = yield* NotificationChannels
  const schedules = yield* Schedules
  const config = yield* AppConfig
  const budget = yield* Budget
  // A monitor with a profile reads its pages in a browser carrying the profile (profile-pages.ts).
  const asProfile = Layer.mergeAll(Layer.succeed(ProfileStore, yield* ProfileStore), Layer.succeed(BrowserPool, yield* BrowserPool))

  const readPages = (urls: ReadonlyArray<string>) =>
    Effect.forEach(urls, (url) => Effect.result(reader.readFresh(url)), { concurrency: PAGE_CONCURRENCY })

  const observe = Effect.fn("Track.observe")(function*(monitor: Monitor) {
    const urls = monitor.target_urls ?? []
    if (urls.length === 0) {
      // Search-only: the result set is the snapshot.
      const request = yield* decodeWebSearchRequest({ queries: [monitor.intent_text.replace(/\s+/g, " ").trim().slice(0, 500)], summarize: false, wait: false }).pipe(Effect.orDie)
      const outcome = yield* Effect.result(webSearch.run(request))
      if (Result.isFailure(outcome)) return yield* Effect.fail(new TickFailed({ code: "search_failed", detail: outcome.failure.message, pages: [], costUsd: 0 }))
      const results = outcome.success.results.map((item) => ({ title: item.title, url: item.canonical_url }))
      return {
        text: results.map((item) => `${item.title} ${item.url}`).join("\n"),
        extracted: { results },
        pages: [],
        costUsd: 0
      } satisfies Observation
    }
    const reads: ReadonlyArray<Result.Result<{ readonly finalUrl: string; readonly method: "http" | "browser"; readonly text: string }, { readonly message: string }>> =
      monitor.profile_id === null
        ? yield* readPages(urls)
        : yield* readPagesAsProfile(monitor.project_id, monitor.profile_id, urls, config.allowPrivateNetworks).pipe(Effect.provide(asProfile))
    const pages: Array<PageResult> = reads.map((read, index) =>
      Result.isSuccess(read)
        ? { url: urls[index]!, final_url: read.success.finalUrl, ok: true, method: read.success.method, content_hash: sha256(normalizeText(read.success.text, { ignoreDates: true })), error: null }
        : { url: urls[index]!, final_url: null, ok: false, method: null, content_hash: null, error: read.failure.message.slice(0, 500) }
    )
    const failed = pages.filter((page) => !page.ok)
    if (failed.length > 0) {
      return yield* Effect.fail(new TickFailed({ code: "fetch_failed", detail: `${failed.length} of ${pages.length} page(s) could not be read: ${failed.map((page) => `${page.url}: ${page.error}`).join("; ")}`.slice(0, 1000), pages, costUsd: 0 }))
    }
    const texts = reads.map((read) => Result.isSuccess(read) ? read.success.text : "")
    const text = texts.length === 1 ? texts[0]! : texts.map((body, index) => `## ${urls[index]}\n${body}`).join("\n\n")
    if (monitor.extraction_schema === null) return { text, extracted: null, pages, costUsd: 0 } satisfies Observation
    if (Option.isNone(model)) return yield* Effect.fail(new TickFailed({ code: "model_not_configured", detail: "the monitor has an extraction_schema and no model is configured", pages, costUsd: 0 }))
    const extracted = yield* extractStructured(model.value, { intent: monitor.intent_text, schema: monitor.extraction_schema, text }).pipe(
      Effect.mapError((error: ExtractionFailed) => new TickFailed({ code: "extraction_failed", detail: error.detail, pages, costUsd: error.costUsd }))
    )
    return { text, extracted: extracted.value, pages, costUsd: extracted.costUsd } satisfies Observation
  })

  /** Queues the tick's notification on the monitor's channel (once per tick); gives its delivery id. */
  const notify = Effect.fn("Track.notify")(function*(monitor: Monitor, tick: Pick<TickRun, "id" | "n">, snapshot: Snapshot) {
    const { deliveryId } = yield* channels.notify({
      projectId: monitor.project_id,
      monitorId: monitor.id,
      tickId: tick.id,
      channel: monitor.notify_channel,
      secret: monitor.notify_secret,
      message: { type: "monitor.triggered", data: notificationData(monitor, tick, snapshot) }
    })
    return deliveryId
  })

  /**
   * The tick's work: a tick whose monitor is paused, aligning or ended is skipped (never
   * started); else it starts, is paid for, observes, and ends with its outcome.
   */
  const conduct = Effect.fn("Track.tick")(function*(run: Run, { tick: request, monitor: known }: TickRequest, begin: Begin<StartedTick>) {
    const monitor = known ?? (yield* store.get(request.monitor_id))
    if (monitor === undefined) return
    // A paused, aligning or ended monitor skips scheduled ticks (run_now still runs unless it ended).
    const runs = monitor.status === "active" || monitor.status === "failing" ||
      (request.trigger === "run_now" && (monitor.status === "paused" || monitor.status === "pending_clarification"))
    if (!runs) {
      yield* store.skipTick({ id: run.id, monitor_id: monitor.id }, `the monitor is ${monitor.status}`)
      return
    }
    const [token, , { tick, previous }] = yield* begin(Effect.void)
    // A tick the project cannot pay for is not run: it fails budget_exceeded (charged nothing)
    // and the monitor goes `failing` at once; its next paid tick makes it active again.
    // Its fee is held from the balance until it ends, so concurrent ticks cannot overdraw it.
    const unpaid = yield* budget.holdTick(monitor.project_id, tick.id)
    if (unpaid !== null) {
      const detail = unpaid === "credits" ? "the project's credits ran out" : "the project's monthly budget cap was reached"
      yield* store.failTick(tick, {
        code: "budget_exceeded",
        detail: `${detail}; the tick was not run`,
        pages: [],
        llmCostMicros: 0,
        statusReason: `budget_exceeded: ${detail}; ticks resume when the project can pay (add credits or raise the cap)`
      }, 1, token)
      return
    }
    const observed = yield* Effect.result(observe(monitor))
    if (Result.isFailure(observed)) {
      const failure = observed.failure
      yield* store.failTick(tick, { code: failure.code, detail: failure.detail, pages: failure.pages, llmCostMicros: Math.round(failure.costUsd * 1e6) }, config.trackMaxConsecutiveFailures, token)
      yield* Effect.logWarning("monitor tick failed").pipe(Effect.annotateLogs({ monitor_id: monitor.id, run_id: tick.id, code: failure.code }))
      return
    }
    const { extracted, pages, costUsd } = observed.success
    const text = normalizeText(observed.success.text, { ignoreDates: true }).slice(0, MAX_SNAPSHOT_TEXT)
    const contentHash = sha256(extracted === null ? text : stableJson(extracted))
    const first = previous === undefined
    const changed = !first && previous.content_hash !== contentHash
    const diff: MonitorDiff | null = first
      ? null
      : extracted !== null
      ? { kind: "json", changes: diffJson(previous.extracted, extracted) }
      : { kind: "text", ...textChangeSummary(previous.text, text), unified: diffText(previous.text, text, { fromLabel: `snapshot ${previous.n}`, toLabel: `snapshot ${tick.n}` }).slice(0, MAX_SNAPSHOT_TEXT) }
    const now = new Date()
    const facts = { first, changed, extracted, previousExtracted: previous?.extracted ?? null, text, tickN: tick.n ?? 1, now }
    const trigger = ruleOf(monitor.trigger_dsl, parseTrigger, DEFAULT_TRIGGER)!
    const fired = evaluate(trigger, facts)
    const stop = ruleOf(monitor.stop_condition_dsl, parseStopCondition, null)
    const stopped = stop !== null && evaluate(stop, facts)
    const { status } = yield* store.completeTick(tick, monitor, {
      contentHash,
      extracted,
      text,
      pages,
      diff,
      changed,
      fired,
      fetchedAt: now,
      llmCostMicros: Math.round(costUsd * 1e6),
      status: stopped ? "completed" : monitor.status,
      statusReason: stopped ? "stop_condition_met" : null,
      events: changed ? [{ type: "monitor.change_detected", data: { run_id: tick.id, n: tick.n, diff } }] : [],
      notify: fired ? (snapshot) => notify(monitor, tick, snapshot) : undefined
    }, token)
    // The notification was queued inside that transaction, so the dispatcher (or the scheduler)
    // woken then may have looked before it committed: they look again now.
    if (fired) yield* channels.wake
    if (status === "completed") yield* schedules.remove({ kind: MONITOR_OWNER, id: monitor.id })
  })

  /**
   * A tick that ended before: makes sure its notification was recorded (idempotent per tick). One
   * queued with the tick's outcome (its delivery id in the output) was; one recorded without it (by
   * a version that queued it after the outcome) is queued now.
   */
  const finished = (run: Run, { tick: request }: TickRequest) =>
    Effect.gen(function*() {
      const output = tickOutput(run)
      if (run.status !== "done" || output.fired !== true || output.snapshot_id === undefined || output.delivery_id !== undefined) return
      const monitor = yield* store.get(request.monitor_id)
      const snapshot = yield* store.snapshot(output.snapshot_id)
      if (monitor === undefined || snapshot === undefined) return
      const tick = tickOf(run, request)
      const deliveryId = yield* notify(monitor, tick, snapshot)
      yield* store.appendEvent(monitor.id, "monitor.notification.queued", { run_id: tick.id, delivery_id: deliveryId, channel: monitor.notify_channel.kind })
    }).pipe(Effect.catchCause((cause) => Effect.logError("monitor tick notification failed", cause)))

  const executor: RunExecutor<TickRequest, never, StartedTick> = {
    kind: "track_tick",
    requestOf: tickRequestOf,
    conduct,
    // Ticks have no deadline (deadline_at is null): the kernel ends one only failed, when its work failed unexpectedly.
    internalErrorDetail: "the tick failed unexpectedly",
    logAnnotations: { product: "track" },
    record: {
      start: (run, token) => store.startTick(tickOf(run, tickRequestOf(run)!.tick), token),
      // The kernel ends only a tick that has not ended (read just before).
      end: (run, end, token) =>
        store.failTick(tickOf(run, tickRequestOf(run)!.tick), { code: end.code, detail: end.detail, pages: [], llmCostMicros: 0 }, config.trackMaxConsecutiveFailures, token).pipe(Effect.asVoid)
    },
    finished
  }

  /**
   * The tick run of a schedule slot, made once per slot (a second call finds it), with its request
   * and the monitor as read to make it, for the kernel to execute without reading either again:
   * undefined when the monitor is gone or ended.
   */
  const slotTick = Effect.fn("Track.slotTick")(function*(monitorId: MonitorId, slot: Date) {
    const monitor = yield* store.get(monitorId)
    if (monitor === undefined || isTerminalMonitor(monitor.status)) return undefined
    const run = yield* store.createSlotRun(monitor, slot)
    if (run === undefined) return undefined
    const request = tickRequestOf(run)
    return request === undefined ? undefined : { run, request: { ...request, monitor } }
  })

  return { executor, slotTick }
})
