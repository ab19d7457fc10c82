/**
 * Monitors in PostgreSQL: the monitor rows, their event log, tick runs and snapshots.
 *
 * A monitor's event log is in the one event log, `run_events`, under the monitor's id: ids per
 * monitor (taken from the monitor row's `event_seq`), written in the same transaction as the
 * change they report and announced on the shared events channel, so the SSE machinery of runs
 * serves monitors too. A tick run is a row of `runs` of kind `track_tick` (its request
 * `{monitor_id, trigger, slot_at}`, its outcome `{n, changed, fired, snapshot_id, pages}` in
 * `output`, its costs in the run cost columns; src/store/migrations/0033_track_on_runs.ts), read
 * back in the TickRun shape of the wire by `tickColumns`. Its status is a run status: `running`
 * from its creation (as a tick's always was; its start is `started_at`, so the start's update
 * changes no indexed column of `runs` and stays a HOT update), then `done`, `failed`, or
 * `canceled` with terminal_reason `skipped` (the wire's `skipped`).
 *
 * A tick's outcome (snapshot, tick run, the monitor's counters and status, its events, and the
 * notification of a tick whose trigger fired) is written in one transaction, so a tick interrupted
 * before that point left nothing and is done again when its message is delivered again. A tick is
 * executed by the run kernel (src/track/tick.ts): its start claims the tick run for the
 * execution's token, and the writes of its end carry the token: one of an execution that another
 * has claimed the tick from since dies with SupersededExecution and writes nothing, as a run's
 * writes do (src/store/run-log.ts).
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient, type Statement } from "effect/sql"
import { MonitorNotFound } from "../domain/errors.ts"
import { makeId } from "../domain/ids.ts"
import type { DeliveryId, ExecutionToken } from "../domain/id-schemas.ts"
import {
  type AlignmentTurn,
  Monitor,
  type MonitorId,
  type MonitorStatus,
  type NotifyChannel,
  type PageResult,
  type PendingQuestion,
  Snapshot,
  type MonitorDiff,
  type SnapshotId,
  TickRun,
  type TickRunId
} from "../domain/monitor.ts"
import type { CanonicalSchedule } from "../domain/schedule-spec.ts"
import { EVENTS_CHANNEL, eventsAfter, lockRun, type RunEvent } from "../store/run-log.ts"
import { toMicros } from "../domain/money.ts"
import type { EventData, MonitorEventType, NewMonitorEvent } from "../domain/events.ts"
import { chargeInTransaction } from "../billing/store/ledger.ts"
import { releaseHoldInTransaction } from "../billing/store/credit-holds.ts"
import { AppConfig } from "../config/config.ts"
import { withMethodSpans } from "../observability/spans.ts"
import { type ProjectId, type Run, runFromRow } from "../domain/run.ts"
import { decodeRows } from "../domain/rows.ts"

const monitorRows = decodeRows(Monitor)
const tickRows = decodeRows(TickRun)
const snapshotRows = decodeRows(Snapshot)
const decodeTick = Schema.decodeUnknownSync(TickRun)

/** What appending events reads: the newest event's id (`max(id)::text`, null when nothing was appended). */
const AppendedEvents = Schema.Struct({ id: Schema.NullOr(Schema.String) })
/** A count taken as `count(*)::text`. */
const TextCount = Schema.Struct({ total: Schema.String })
/** A count taken as `count(*)::int`. */
const IntCount = Schema.Struct({ n: Schema.Number })
/** What a tick's outcome reads back: whether the monitor row was written (`count(*)::text` of it, "1" or "0"). */
const OutcomeWritten = Schema.Struct({ matched: Schema.String })
/**
 * What starting a tick reads: the tick run (its TickRun columns) and the monitor's previous
 * snapshot, its columns prefixed `previous_` (null when the monitor has none).
 */
const StartedTick = Schema.Struct({
  ...TickRun.fields,
  previous_n: Schema.NullOr(Schema.Int),
  previous_content_hash: Schema.NullOr(Schema.String),
  previous_extracted: Schema.Unknown,
  previous_text: Schema.NullOr(Schema.String)
})

/** The first key of the advisory lock that serialises a project's monitor creates (the second is the project's hash). */
const PROJECT_MONITORS_LOCK = 0x7761_6d31 // "wam1"

const json = (value: unknown) => value === null || value === undefined ? null : JSON.stringify(value)

/** Events as the JSON records `insertEvents` numbers (`ord` from 1). */
/** An event as written: its type and a payload of some monitor event type (typed by the callers, NewMonitorEvent). */
type StoredMonitorEvent = { readonly type: MonitorEventType; readonly data: EventData<MonitorEventType> }
const eventsJson = (events: ReadonlyArray<StoredMonitorEvent>) =>
  JSON.stringify(events.map((event, index) => ({ ord: index + 1, type: event.type, data: event.data })))

export interface NewMonitor {
  readonly projectId: ProjectId
  readonly createdByKeyId: string | null
  readonly status: MonitorStatus
  readonly intent: string
  readonly channel: NotifyChannel
  readonly notifySecret: string
  readonly schedule: CanonicalSchedule | null
  readonly targetUrls: ReadonlyArray<string> | null
  readonly extractionSchema: Record<string, unknown> | null
  readonly triggerDsl: Record<string, unknown> | null
  readonly stopConditionDsl: Record<string, unknown> | null
  readonly profileId: string | null
}

/** The fields `refine` (and the end of alignment) may set. */
export interface MonitorSettings {
  readonly intent_text?: string
  readonly notify_channel?: NotifyChannel
  readonly schedule?: CanonicalSchedule | null
  readonly target_urls?: ReadonlyArray<string> | null
  readonly extraction_schema?: Record<string, unknown> | null
  readonly trigger_dsl?: Record<string, unknown> | null
  readonly stop_condition_dsl?: Record<string, unknown> | null
  readonly profile_id?: string | null
}

/** What the writes of a tick's start, end and skip read of it (a tick run, or the run the kernel executes). */
export type TickRef = Pick<TickRun, "id" | "monitor_id" | "project_id" | "n" | "trigger" | "slot_at" | "started_at">

/** What a tick compares with: the monitor's newest snapshot before it. */
export interface PreviousSnapshot {
  readonly n: number
  readonly content_hash: string
  readonly extracted: unknown
  readonly text: string
}

/** A successful tick's outcome. */
export interface TickSuccess {
  readonly contentHash: string
  readonly extracted: unknown | null
  readonly text: string
  readonly pages: ReadonlyArray<PageResult>
  readonly diff: MonitorDiff | null
  readonly changed: boolean
  readonly fired: boolean
  readonly fetchedAt: Date
  readonly llmCostMicros: number
  /** The monitor's status after this tick (`completed` when its stop condition was met). */
  readonly status: MonitorStatus
  readonly statusReason: string | null
  readonly events: ReadonlyArray<NewMonitorEvent>
  /**
   * Present when the trigger fired: queues the tick's notification on the monitor's channel and
   * gives its delivery id. It runs inside the transaction that records the outcome, once the
   * outcome is written (not when the monitor is gone), so the notification is recorded with the
   * tick or not at all, and its `monitor.notification.queued` event precedes the status change.
   */
  readonly notify?: ((snapshot: Snapshot) => Effect.Effect<DeliveryId | null>) | undefined
}

const monitorColumns = `id, project_id, created_by_key_id, status, status_reason, intent_text, notify_channel, notify_secret,
  schedule, target_urls, extraction_schema, trigger_dsl, stop_condition_dsl, profile_id, baseline_extracted,
  baseline_extracted_at, last_tick_at, last_tick_n, consecutive_failures, last_snapshot_id, alignment, pending_question,
  created_at, updated_at`

export class MonitorStore extends Context.Service<MonitorStore, {
  readonly create: (input: NewMonitor) => Effect.Effect<Monitor>
  /** The monitor of the project, or MonitorNotFound. */
  readonly find: (projectId: ProjectId, monitorId: MonitorId) => Effect.Effect<Monitor, MonitorNotFound>
  readonly get: (monitorId: MonitorId) => Effect.Effect<Monitor | undefined>
  readonly list: (projectId: ProjectId, options: { readonly offset: number; readonly limit: number; readonly status?: MonitorStatus | undefined }) => Effect.Effect<{ readonly items: ReadonlyArray<Monitor>; readonly total: number }>
  /**
   * Inside the caller's transaction: takes the lock that serialises the project's monitor creates
   * (a transaction-scoped advisory lock, so on every node) and counts the project's monitors not
   * ended (the plan's cap counts those). The create that follows in that transaction is counted by
   * the next one.
   */
  readonly countOpenForCreate: (projectId: ProjectId) => Effect.Effect<number>
  /**
   * Changes the status (and the settings given) if the current status is one of `from`; with its
   * `monitor.status_changed` event when the status changes. Returns the monitor after, or the
   * current one unchanged (with `changed: false`) when its status was not in `from`.
   */
  readonly update: (monitorId: MonitorId, input: {
    readonly from: ReadonlyArray<MonitorStatus>
    readonly to?: MonitorStatus
    readonly reason?: string | null
    readonly settings?: MonitorSettings
    readonly resetFailures?: boolean
    readonly alignment?: ReadonlyArray<AlignmentTurn>
    readonly pendingQuestion?: PendingQuestion | null
    readonly events?: ReadonlyArray<NewMonitorEvent>
  }) => Effect.Effect<{ readonly monitor: Monitor; readonly changed: boolean }, MonitorNotFound>
  readonly remove: (monitorId: MonitorId) => Effect.Effect<void>
  /**
   * Appends an event; returns its id, or undefined when the monitor is gone or has ended
   * (completed or canceled): a monitor's stream ends at that change, so nothing follows it.
   */
  readonly appendEvent: <T extends MonitorEventType>(monitorId: MonitorId, type: T, data: EventData<T>) => Effect.Effect<number | undefined>
  readonly eventsAfter: (monitorId: MonitorId, afterId: number, limit: number) => Effect.Effect<ReadonlyArray<RunEvent>>
  /**
   * The tick run of a schedule slot (made once: a second call returns the first), or a new run_now
   * tick. MonitorNotFound when the monitor is gone (deleted since the caller read it).
   */
  readonly createTick: (monitor: Monitor, trigger: "schedule" | "run_now", slotAt: Date | null) => Effect.Effect<TickRun, MonitorNotFound>
  /**
   * `createTick` of a schedule slot, read as the run kernel reads a run (its `Fire` executes it at
   * once); undefined when the monitor is gone (deleted since the caller read it).
   */
  readonly createSlotRun: (monitor: Monitor, slotAt: Date) => Effect.Effect<Run | undefined>
  readonly getTick: (tickId: TickRunId) => Effect.Effect<TickRun | undefined>
  readonly findTick: (monitorId: MonitorId, tickId: TickRunId) => Effect.Effect<TickRun | undefined>
  readonly listTicks: (monitorId: MonitorId, limit: number, beforeId: string | undefined) => Effect.Effect<ReadonlyArray<TickRun>>
  /**
   * Numbers the tick (once) and records its start, with `monitor.tick.started`; returns the tick
   * and the monitor's previous snapshot (what this tick compares with), in one statement. With
   * `claim`, the same statement makes that execution the tick run's owner (the run kernel's claim,
   * RunStore.claimExecution, folded into the start): an older execution's later writes are refused.
   */
  readonly startTick: (tick: TickRef, claim?: ExecutionToken) => Effect.Effect<{ readonly tick: TickRef; readonly previous: PreviousSnapshot | undefined }>
  /**
   * Records a successful tick: its snapshot, the tick run, the monitor's counters and status, the
   * events and the notification (`outcome.notify`, its delivery id kept in the tick run's output),
   * atomically. The events are in this order: the outcome's, `monitor.tick.completed`,
   * `monitor.notification.queued`, then the status change (a stream ends at a change to
   * completed). `seen` is the monitor as the tick read it; when its status changed meanwhile
   * (paused, canceled) the outcome is applied under the row lock instead.
   */
  readonly completeTick: (tick: TickRef, seen: Monitor, outcome: TickSuccess, executor?: ExecutionToken) => Effect.Effect<{ readonly status: MonitorStatus; readonly snapshot: Snapshot }>
  /**
   * Records a failed tick: the monitor's consecutive failures go up and, at `failLimit`, an
   * active monitor becomes `failing`.
   */
  readonly failTick: (tick: TickRef, error: {
    readonly code: string
    readonly detail: string
    readonly pages: ReadonlyArray<PageResult>
    readonly llmCostMicros: number
    /** The monitor's status_reason when this failure makes it `failing` (default: the failure count and detail). */
    readonly statusReason?: string
  }, failLimit: number, executor?: ExecutionToken) => Effect.Effect<Monitor>
  /** Ends a tick that did not run (its monitor was paused or ended meanwhile); not a failure. */
  readonly skipTick: (tick: Pick<TickRun, "id" | "monitor_id">, reason: string) => Effect.Effect<void>
  readonly snapshot: (snapshotId: SnapshotId) => Effect.Effect<Snapshot | undefined>
  readonly findSnapshot: (monitorId: MonitorId, snapshotId: SnapshotId) => Effect.Effect<Snapshot | undefined>
  readonly listSnapshots: (monitorId: MonitorId, limit: number, beforeId: string | undefined) => Effect.Effect<ReadonlyArray<Snapshot>>
}>()("wa/track/MonitorStore") {
  static readonly layer = Layer.effect(
    MonitorStore,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      // WA_BILLING=on: a tick's costs are ledger entries written with its outcome (see chargeTick).
      const appConfig = yield* Effect.serviceOption(AppConfig)
      const billing = Option.match(appConfig, { onNone: () => false, onSome: (c) => c.billing === "on" })
      const tickFeeMicros = Option.match(appConfig, { onNone: () => 0, onSome: (c) => toMicros(c.prices.track_per_tick) })

      /**
       * Charges a tick, inside the transaction that records its outcome, once per tick (keys
       * `llm:<tick>` and `track:<tick>`): its model tokens, and the tick fee when it succeeded. The
       * work is done, so the charges are recorded even past zero; the next tick is refused instead.
       * Returns the fee the tick run's service_cost_micros takes.
       */
      const chargeTick = (tick: TickRef, llmMicros: number, succeeded: boolean) =>
        Effect.gen(function*() {
          const fee = succeeded ? tickFeeMicros : 0
          if (!billing) return fee
          // The tick ends: its credit hold (src/store/credit-holds.ts) is settled by these charges.
          yield* releaseHoldInTransaction(sql, tick.id)
          yield* chargeInTransaction(sql, {
            projectId: tick.project_id, kind: "charge_llm", micros: llmMicros, idempotencyKey: `llm:${tick.id}`, runId: tick.id, force: true
          })
          const charged = yield* chargeInTransaction(sql, {
            projectId: tick.project_id, kind: "charge_track", micros: fee, idempotencyKey: `track:${tick.id}`, runId: tick.id, force: true
          })
          return charged.recorded ? fee : 0
        })
      const columns = sql.literal(monitorColumns)

      const lock = (monitorId: MonitorId) =>
        monitorRows(sql`SELECT ${columns} FROM monitors WHERE id = ${monitorId} FOR UPDATE`).pipe(Effect.map((rows) => rows[0]))

      /**
       * Appends events in one statement: they take the next ids of the monitor's `event_seq` (the
       * row update serializes concurrent writers) and one NOTIFY announces the newest. With
       * `whileOpen`, nothing is appended to a monitor that has ended (completed or canceled): its
       * stream ended at that change, so nothing may follow it in its log.
       */
      const insertEvents = (monitorId: MonitorId, events: ReadonlyArray<StoredMonitorEvent>, options?: { readonly whileOpen: boolean }) =>
        decodeRows(AppendedEvents)(sql`
          WITH m AS (
            UPDATE monitors SET event_seq = event_seq + ${events.length}
            WHERE id = ${monitorId} ${options?.whileOpen === true ? sql`AND status NOT IN ('completed', 'canceled')` : sql``}
            RETURNING event_seq
          ), e AS (
            INSERT INTO run_events (run_id, id, type, data)
            SELECT ${monitorId}, m.event_seq - ${events.length} + ev.ord, ev.type, ev.data
            FROM m, jsonb_to_recordset(${eventsJson(events)}::jsonb) AS ev(ord int, type text, data jsonb)
            RETURNING id
          )
          SELECT max(id)::text AS id, pg_notify(${EVENTS_CHANNEL}, ${monitorId} || ':' || max(id)::text) FROM e`).pipe(
          Effect.map((rows) => rows[0]?.id == null ? undefined : Number(rows[0].id))
        )
      const insertEvent = <T extends MonitorEventType>(monitorId: MonitorId, type: T, data: EventData<T>, options?: { readonly whileOpen: boolean }) =>
        insertEvents(monitorId, [{ type, data }], options)

      const selectMonitor = (monitorId: MonitorId) =>
        monitorRows(sql`SELECT ${columns} FROM monitors WHERE id = ${monitorId}`).pipe(Effect.map((rows) => rows[0]))

      // A tick run (a `runs` row of kind track_tick) in the TickRun shape.
      const tickColumns = sql.literal(`id, request->>'monitor_id' AS monitor_id, project_id, (output->>'n')::int AS n,
        request->>'trigger' AS trigger, (request->>'slot_at')::timestamptz AS slot_at,
        CASE status WHEN 'canceled' THEN 'skipped' ELSE status END AS status,
        (output->>'changed')::boolean AS changed, (output->>'fired')::boolean AS fired, output->>'snapshot_id' AS snapshot_id,
        coalesce(output->'pages', '[]'::jsonb) AS pages, error_code, error_detail,
        round(llm_cost_usd * 1000000)::int AS llm_cost_micros, round(service_cost_usd * 1000000)::int AS service_cost_micros,
        created_at, started_at, finished_at`)
      /** The tick runs of a monitor (runs_track_tick_monitor and runs_track_tick_slot serve these). */
      const ticksOf = (monitorId: MonitorId) => sql`kind = 'track_tick' AND request->>'monitor_id' = ${monitorId}`
      const snapshotColumns = sql.literal("id, monitor_id, run_id, n, content_hash, extracted, text, pages, diff, changed, fetched_at, created_at")

      /** `monitor.tick.started` but its number, which the statement that starts the tick gives it (the row's `n`). */
      const tickStarted = (tick: TickRef): Omit<EventData<"monitor.tick.started">, "n"> => ({
        run_id: tick.id,
        trigger: tick.trigger,
        slot_at: tick.slot_at?.toISOString() ?? null,
        resumed: tick.started_at !== null
      })

      /** Whether the execution `executor` (when one is named) still owns the tick run. */
      const ownedBy = (tickId: TickRunId, executor: ExecutionToken | undefined) =>
        executor === undefined ? sql`` : sql`AND EXISTS (SELECT 1 FROM runs WHERE id = ${tickId} AND executor = ${executor})`

      /**
       * Makes the tick run of a schedule slot once (a second call reads the first), or a new run_now
       * tick; read back as `columns`, decoded by `decode`. Made only while the monitor exists (its
       * row key-share locked, as a reference to it would): `remove` deletes the monitor's tick runs
       * after the monitor. Undefined when the monitor is gone (deleted after the caller read it):
       * nothing is inserted, and there is no slot tick to read instead (a run_now tick has no slot).
       */
      const insertTick = <A>(monitor: Monitor, trigger: "schedule" | "run_now", slotAt: Date | null, columns: Statement.Fragment, decode: (row: unknown) => A) =>
        Effect.gen(function*() {
          // The slot as JavaScript writes it: one text per instant, so the unique index holds.
          const slot = slotAt?.toISOString() ?? null
          const inserted = yield* sql`
            INSERT INTO runs (id, session_id, project_id, kind, status, request, output, max_steps)
            SELECT ${makeId("tick")}, NULL, m.project_id, 'track_tick', 'running',
              ${JSON.stringify({ monitor_id: monitor.id, trigger, slot_at: slot })}::jsonb, '{}'::jsonb, 0
            FROM monitors m WHERE m.id = ${monitor.id} FOR KEY SHARE
            ON CONFLICT ((request->>'monitor_id'), (request->>'slot_at')) WHERE kind = 'track_tick' DO NOTHING
            RETURNING ${columns}`
          if (inserted[0] !== undefined) return decode(inserted[0])
          // Nothing inserted: the slot's tick was made before (the conflict), or the monitor is gone.
          if (slot === null) return undefined
          const existing = yield* sql`
            SELECT ${columns} FROM runs WHERE ${ticksOf(monitor.id)} AND request->>'slot_at' = ${slot}`
          return existing[0] === undefined ? undefined : decode(existing[0])
        }).pipe(Effect.orDie)

      const tickStatusEvent = (monitor: Monitor, to: MonitorStatus, reason: string | null) =>
        monitor.status === to ? Effect.void : insertEvent(monitor.id, "monitor.status_changed", { from: monitor.status, to, reason })

      return MonitorStore.of(withMethodSpans<MonitorStore["Service"]>("MonitorStore", {
        find: (projectId, monitorId) =>
          selectMonitor(monitorId).pipe(
            Effect.orDie,
            Effect.flatMap((monitor) =>
              monitor === undefined || monitor.project_id !== projectId ? Effect.fail(new MonitorNotFound({ monitorId })) : Effect.succeed(monitor)
            )
          ),
        get: (monitorId) => selectMonitor(monitorId).pipe(Effect.orDie),
        list: (projectId, options) =>
          Effect.gen(function*() {
            const status = options.status === undefined ? sql`` : sql`AND status = ${options.status}`
            const items = yield* monitorRows(sql`
              SELECT ${columns} FROM monitors WHERE project_id = ${projectId} ${status}
              ORDER BY id DESC LIMIT ${options.limit} OFFSET ${options.offset}`)
            const count = yield* decodeRows(TextCount)(sql`SELECT count(*)::text AS total FROM monitors WHERE project_id = ${projectId} ${status}`)
            return { items, total: Number(count[0]!.total) }
          }).pipe(Effect.orDie),
        // The monitor's events and tick runs are in the shared tables: deleted with it.
        remove: (monitorId) =>
          sql.withTransaction(Effect.gen(function*() {
            yield* sql`DELETE FROM monitors WHERE id = ${monitorId}`
            yield* sql`DELETE FROM run_events WHERE run_id = ${monitorId}`
            yield* sql`DELETE FROM runs WHERE ${ticksOf(monitorId)}`
          })).pipe(Effect.orDie),
        appendEvent: <T extends MonitorEventType>(monitorId: MonitorId, type: T, data: EventData<T>) =>
          insertEvent(monitorId, type, data, { whileOpen: true }).pipe(Effect.orDie),
        eventsAfter: (monitorId, afterId, limit) => eventsAfter(sql, monitorId, afterId, limit).pipe(Effect.orDie),
        getTick: (tickId) =>
          tickRows(sql`SELECT ${tickColumns} FROM runs WHERE id = ${tickId} AND kind = 'track_tick'`).pipe(Effect.map((rows) => rows[0])),
        findTick: (monitorId, tickId) =>
          tickRows(sql`SELECT ${tickColumns} FROM runs WHERE id = ${tickId} AND ${ticksOf(monitorId)}`).pipe(Effect.map((rows) => rows[0])),
        listTicks: (monitorId, limit, beforeId) =>
          tickRows(sql`
            SELECT ${tickColumns} FROM runs WHERE ${ticksOf(monitorId)}
            ${beforeId === undefined ? sql`` : sql`AND id < ${beforeId}`}
            ORDER BY id DESC LIMIT ${limit}`),
        skipTick: (tick, reason) =>
          sql.withTransaction(Effect.gen(function*() {
            yield* sql`SELECT id FROM monitors WHERE id = ${tick.monitor_id} FOR UPDATE`
            yield* sql`
              UPDATE runs SET status = 'canceled', terminal_reason = 'skipped', error_detail = ${reason}, finished_at = now(), updated_at = now()
              WHERE id = ${tick.id}`
            if (billing) yield* releaseHoldInTransaction(sql, tick.id)
            // A monitor that ended skips its ticks without a word: its log ended with it.
            yield* insertEvent(tick.monitor_id, "monitor.tick.skipped", { run_id: tick.id, reason }, { whileOpen: true })
          })).pipe(Effect.orDie),
        snapshot: (snapshotId) =>
          snapshotRows(sql`SELECT ${snapshotColumns} FROM monitor_snapshots WHERE id = ${snapshotId}`).pipe(Effect.map((rows) => rows[0])),
        findSnapshot: (monitorId, snapshotId) =>
          snapshotRows(sql`SELECT ${snapshotColumns} FROM monitor_snapshots WHERE id = ${snapshotId} AND monitor_id = ${monitorId}`).pipe(
            Effect.map((rows) => rows[0])
          ),
        listSnapshots: (monitorId, limit, beforeId) =>
          snapshotRows(sql`
            SELECT ${snapshotColumns} FROM monitor_snapshots WHERE monitor_id = ${monitorId}
            ${beforeId === undefined ? sql`` : sql`AND id < ${beforeId}`}
            ORDER BY id DESC LIMIT ${limit}`),
        countOpenForCreate: (projectId) =>
          Effect.gen(function*() {
            yield* sql`SELECT pg_advisory_xact_lock(${PROJECT_MONITORS_LOCK}, hashtext(${projectId}))`
            const [counted] = yield* decodeRows(IntCount)(sql`
              SELECT count(*)::int AS n FROM monitors WHERE project_id = ${projectId} AND status NOT IN ('canceled', 'completed')`)
            return counted!.n
          }).pipe(Effect.orDie),
        create: (input) =>
          sql.withTransaction(Effect.gen(function*() {
            const id = makeId("mon")
            const rows = yield* monitorRows(sql`
              INSERT INTO monitors (id, project_id, created_by_key_id, status, intent_text, notify_channel, notify_secret, schedule,
                target_urls, extraction_schema, trigger_dsl, stop_condition_dsl, profile_id)
              VALUES (${id}, ${input.projectId}, ${input.createdByKeyId}, ${input.status}, ${input.intent}, ${json(input.channel)}::jsonb,
                ${input.notifySecret}, ${json(input.schedule)}::jsonb, ${json(input.targetUrls)}::jsonb, ${json(input.extractionSchema)}::jsonb,
                ${json(input.triggerDsl)}::jsonb, ${json(input.stopConditionDsl)}::jsonb, ${input.profileId})
              RETURNING ${columns}`)
            yield* insertEvent(id, "monitor.created", { monitor_id: id, status: input.status, mode: input.schedule === null ? "alignment" : "direct" })
            return rows[0]!
          })).pipe(Effect.orDie),
        update: (monitorId, input) =>
          sql.withTransaction(Effect.gen(function*() {
            const current = yield* lock(monitorId)
            if (current === undefined) return yield* new MonitorNotFound({ monitorId })
            if (!input.from.includes(current.status)) return { monitor: current, changed: false }
            const to = input.to ?? current.status
            const settings = input.settings ?? {}
            const set = (key: keyof MonitorSettings) => key in settings
            const rows = yield* monitorRows(sql`
              UPDATE monitors SET
                status = ${to},
                status_reason = ${input.to !== undefined ? (input.reason ?? null) : current.status_reason},
                intent_text = ${settings.intent_text ?? current.intent_text},
                notify_channel = ${json(settings.notify_channel ?? current.notify_channel)}::jsonb,
                schedule = ${json(set("schedule") ? settings.schedule : current.schedule)}::jsonb,
                target_urls = ${json(set("target_urls") ? settings.target_urls : current.target_urls)}::jsonb,
                extraction_schema = ${json(set("extraction_schema") ? settings.extraction_schema : current.extraction_schema)}::jsonb,
                trigger_dsl = ${json(set("trigger_dsl") ? settings.trigger_dsl : current.trigger_dsl)}::jsonb,
                stop_condition_dsl = ${json(set("stop_condition_dsl") ? settings.stop_condition_dsl : current.stop_condition_dsl)}::jsonb,
                profile_id = ${set("profile_id") ? (settings.profile_id ?? null) : current.profile_id},
                consecutive_failures = ${input.resetFailures === true ? 0 : current.consecutive_failures},
                alignment = ${json(input.alignment ?? current.alignment)}::jsonb,
                pending_question = ${json(input.pendingQuestion !== undefined ? input.pendingQuestion : current.pending_question)}::jsonb,
                updated_at = now()
              WHERE id = ${monitorId}
              RETURNING ${columns}`)
            if (input.settings !== undefined && Object.keys(input.settings).length > 0) {
              yield* insertEvent(monitorId, "monitor.updated", { fields: Object.keys(input.settings) })
            }
            // What caused the change (alignment.abandoned, alignment.completed) before the change,
            // and the status change last, as a tick's are: a stream ends after its change to
            // completed or canceled, so nothing of the monitor comes after that event.
            for (const event of input.events ?? []) yield* insertEvent(monitorId, event.type, event.data)
            if (to !== current.status) yield* insertEvent(monitorId, "monitor.status_changed", { from: current.status, to, reason: input.reason ?? null })
            return { monitor: rows[0]!, changed: true }
          })).pipe(Effect.catchTag("SqlError", (error) => Effect.die(error))),
        createTick: (monitor, trigger, slotAt) =>
          insertTick(monitor, trigger, slotAt, tickColumns, decodeTick).pipe(
            Effect.flatMap((tick) => tick === undefined ? Effect.fail(new MonitorNotFound({ monitorId: monitor.id })) : Effect.succeed(tick))
          ),
        createSlotRun: (monitor, slotAt) => insertTick(monitor, "schedule", slotAt, sql.literal("*"), runFromRow),
        startTick: (tick, claim) =>
          // One statement: the tick run claimed, the tick numbered once (a tick started before
          // keeps its number), its start recorded, `monitor.tick.started` appended and announced,
          // and the previous snapshot read.
          decodeRows(StartedTick)(sql`
            WITH m AS (
              UPDATE monitors SET last_tick_n = last_tick_n + ${tick.n === null ? 1 : 0}, event_seq = event_seq + 1, updated_at = now()
              WHERE id = ${tick.monitor_id} AND EXISTS (SELECT 1 FROM runs WHERE id = ${tick.id})
              RETURNING last_tick_n, event_seq, last_snapshot_id
            ), r AS (
              UPDATE runs SET output = output || jsonb_build_object('n', coalesce((output->>'n')::int, (SELECT last_tick_n FROM m))),
                started_at = coalesce(started_at, now()), updated_at = now(), executor = coalesce(${claim ?? null}, executor)
              WHERE id = ${tick.id} AND EXISTS (SELECT 1 FROM m)
              RETURNING ${tickColumns}
            ), e AS (
              INSERT INTO run_events (run_id, id, type, data)
              SELECT ${tick.monitor_id}, m.event_seq, 'monitor.tick.started', ${JSON.stringify(tickStarted(tick))}::jsonb || jsonb_build_object('n', r.n)
              FROM m, r
              RETURNING id
            )
            SELECT r.*, p.n AS previous_n, p.content_hash AS previous_content_hash, p.extracted AS previous_extracted, p.text AS previous_text
            FROM r
            LEFT JOIN monitor_snapshots p ON p.id = (SELECT last_snapshot_id FROM m),
            (SELECT pg_notify(${EVENTS_CHANNEL}, ${tick.monitor_id} || ':' || (SELECT id FROM e)::text)) AS notified`).pipe(
            Effect.map((rows) => {
              const row = rows[0]
              // The monitor or the tick is gone: nothing was started.
              if (row === undefined) return { tick, previous: undefined }
              const { previous_n, previous_content_hash, previous_extracted, previous_text, ...columns } = row
              return {
                tick: new TickRun(columns),
                // The snapshot's n, content_hash and text are NOT NULL: all null when there is none.
                previous: previous_n === null || previous_content_hash === null || previous_text === null ? undefined : {
                  n: previous_n,
                  content_hash: previous_content_hash,
                  extracted: previous_extracted ?? null,
                  text: previous_text
                }
              }
            })
          ),
        completeTick: (tick, seen, outcome, executor) =>
          Effect.gen(function*() {
            const snapshotId = makeId("snap")
            const n = tick.n ?? seen.last_tick_n
            const snapshot = new Snapshot({
              id: snapshotId,
              monitor_id: tick.monitor_id,
              run_id: tick.id,
              n,
              content_hash: outcome.contentHash,
              extracted: outcome.extracted,
              text: outcome.text,
              pages: outcome.pages,
              diff: outcome.diff,
              changed: outcome.changed,
              fetched_at: outcome.fetchedAt,
              created_at: outcome.fetchedAt
            })
            // A good tick heals a failing monitor; a monitor paused or canceled meanwhile keeps that status.
            const settle = (current: Monitor) => {
              const healed: MonitorStatus = current.status === "failing" ? "active" : current.status
              const to: MonitorStatus = outcome.status === "completed" && (healed === "active" || healed === "paused") ? "completed" : healed
              const tickEvents: ReadonlyArray<NewMonitorEvent> = [
                ...outcome.events,
                {
                  type: "monitor.tick.completed",
                  data: { run_id: tick.id, n, snapshot_id: snapshotId, changed: outcome.changed, fired: outcome.fired, baseline: current.baseline_extracted_at === null }
                }
              ]
              const statusEvents: ReadonlyArray<NewMonitorEvent> = to === current.status
                ? []
                : [{ type: "monitor.status_changed", data: { from: current.status, to, reason: outcome.statusReason } }]
              return { to, reason: to !== current.status ? outcome.statusReason : current.status_reason, tickEvents, statusEvents }
            }
            const write = (current: Monitor, guard: "seen" | "locked") => {
              const settled = settle(current)
              const { to, reason } = settled
              // Without a notification every event goes in this statement; with one, the status
              // change follows the notification's event (appended once the delivery is queued).
              const events = outcome.notify === undefined ? [...settled.tickEvents, ...settled.statusEvents] : settled.tickEvents
              const statusGuard = guard === "seen" ? sql`AND status = ${current.status}` : sql``
              // One statement (atomic without a transaction): the monitor row first, so nothing
              // else is written when its status is no longer the one the tick saw.
              return decodeRows(OutcomeWritten)(sql`
                WITH m AS (
                  UPDATE monitors SET
                    last_tick_at = now(), consecutive_failures = 0, last_snapshot_id = ${snapshotId},
                    baseline_extracted = CASE WHEN baseline_extracted_at IS NULL THEN ${json(outcome.extracted)}::jsonb ELSE baseline_extracted END,
                    baseline_extracted_at = coalesce(baseline_extracted_at, now()),
                    status = ${to}, status_reason = ${reason}, event_seq = event_seq + ${events.length}, updated_at = now()
                  WHERE id = ${tick.monitor_id} ${statusGuard} ${ownedBy(tick.id, executor)}
                  RETURNING event_seq
                ), s AS (
                  INSERT INTO monitor_snapshots (id, monitor_id, run_id, n, content_hash, extracted, text, pages, diff, changed, fetched_at)
                  SELECT ${snapshotId}, ${tick.monitor_id}, ${tick.id}, ${n}, ${outcome.contentHash}, ${json(outcome.extracted)}::jsonb,
                    ${outcome.text}, ${JSON.stringify(outcome.pages)}::jsonb, ${json(outcome.diff)}::jsonb, ${outcome.changed}, ${outcome.fetchedAt}
                  FROM m
                  RETURNING id
                ), r AS (
                  UPDATE runs SET status = 'done',
                    output = output || ${JSON.stringify({ changed: outcome.changed, fired: outcome.fired, snapshot_id: snapshotId, pages: outcome.pages })}::jsonb,
                    llm_cost_usd = llm_cost_usd + ${outcome.llmCostMicros}::bigint / 1000000.0, finished_at = now(), updated_at = now()
                  WHERE id = ${tick.id} AND EXISTS (SELECT 1 FROM m)
                  RETURNING id
                ), e AS (
                  INSERT INTO run_events (run_id, id, type, data)
                  SELECT ${tick.monitor_id}, m.event_seq - ${events.length} + ev.ord, ev.type, ev.data
                  FROM m, jsonb_to_recordset(${eventsJson(events)}::jsonb) AS ev(ord int, type text, data jsonb)
                  RETURNING id
                )
                SELECT (SELECT count(*) FROM m)::text AS matched,
                  (SELECT pg_notify(${EVENTS_CHANNEL}, ${tick.monitor_id} || ':' || max(id)::text) FROM e) AS notified`).pipe(
                Effect.map((rows) => rows[0]?.matched === "1" ? settled : undefined)
              )
            }
            // The outcome, the notification and the tick's charges commit together.
            const status = yield* sql.withTransaction(Effect.gen(function*() {
              let written = yield* write(seen, "seen")
              if (written === undefined) {
                const current = yield* lock(tick.monitor_id)
                // Under the monitor's lock (the order every tick write takes: monitor, then run).
                if (current !== undefined) yield* lockRun(sql, tick.id, executor)
                written = current === undefined ? undefined : yield* write(current, "locked")
              }
              // The monitor was deleted under the tick: nothing is written, nothing notified.
              if (written === undefined) return undefined
              if (outcome.notify !== undefined) {
                // Queued with the outcome (the monitor row is locked by its update), so it is
                // queued once per tick, and its event comes before the change that may end the stream.
                const deliveryId = yield* outcome.notify(snapshot)
                yield* sql`UPDATE runs SET output = output || ${JSON.stringify({ delivery_id: deliveryId })}::jsonb WHERE id = ${tick.id}`
                yield* insertEvents(tick.monitor_id, [
                  { type: "monitor.notification.queued", data: { run_id: tick.id, delivery_id: deliveryId, channel: seen.notify_channel.kind } },
                  ...written.statusEvents
                ])
              }
              const fee = yield* chargeTick(tick, outcome.llmCostMicros, true)
              if (fee > 0) yield* sql`UPDATE runs SET service_cost_usd = service_cost_usd + ${fee}::bigint / 1000000.0 WHERE id = ${tick.id}`
              return written.to
            }))
            // The monitor was deleted under the tick: nothing was written.
            return { status: status ?? "canceled", snapshot }
          }).pipe(Effect.orDie),
        failTick: (tick, error, failLimit, executor) =>
          sql.withTransaction(Effect.gen(function*() {
            const monitor = (yield* lock(tick.monitor_id))!
            if (executor !== undefined) yield* lockRun(sql, tick.id, executor)
            yield* sql`
              UPDATE runs SET status = 'failed', error_code = ${error.code}, error_detail = ${error.detail},
                output = output || ${JSON.stringify({ pages: error.pages })}::jsonb,
                llm_cost_usd = llm_cost_usd + ${error.llmCostMicros}::bigint / 1000000.0, finished_at = now(), updated_at = now()
              WHERE id = ${tick.id}`
            yield* chargeTick(tick, error.llmCostMicros, false)
            const failures = monitor.consecutive_failures + 1
            const to: MonitorStatus = monitor.status === "active" && failures >= failLimit ? "failing" : monitor.status
            const reason = to === "failing" ? (error.statusReason ?? `${failures} consecutive ticks failed; last: ${error.detail}`).slice(0, 500) : monitor.status_reason
            const rows = yield* monitorRows(sql`
              UPDATE monitors SET last_tick_at = now(), consecutive_failures = ${failures}, status = ${to},
                status_reason = ${reason}, updated_at = now()
              WHERE id = ${tick.monitor_id}
              RETURNING ${columns}`)
            yield* insertEvent(tick.monitor_id, "monitor.tick.failed", {
              run_id: tick.id,
              n: tick.n,
              error: { code: error.code, detail: error.detail },
              consecutive_failures: failures
            })
            yield* tickStatusEvent(monitor, to, reason)
            return rows[0]!
          })).pipe(Effect.orDie)
      }))
    })
  )
}

export type { TickRunId }
