/**
 * Monitors: the Track product's service. It owns the rules (validation beyond the schema, the
 * state machine of pause/resume/refine/cancel, alignment messages and interventions) and hands
 * work to the Monitor entity: ticks (from the scheduler, or run_now) and alignment steps.
 *
 * Direct mode (a schedule given): `active` at once, first tick at once (the baseline), then on
 * the schedule. Alignment mode: `pending_clarification` and the supervisor's first step.
 *
 * Its creates (a monitor, a run_now tick) are the run kernel's (src/runs/create.ts `createWith`):
 * the keyed retry's recovery, Track's rules, the 402 pre-check, the insert (a monitor's under the
 * plan's cap) with the Idempotency-Key claim's record in one transaction, then the dispatch.
 */
import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { randomBytes } from "node:crypto"
import { AgentModel } from "../agent/model.ts"
import { AppConfig } from "../config/config.ts"
import { Budget } from "../billing/budget.ts"
import { type BudgetExceeded, type InsufficientCredits, PlanLimitReached } from "../domain/errors.ts"
import { Plans } from "../billing/plans.ts"
import { AlignmentNeedsModel, InvalidField, MonitorActionRefused, MonitorNotInAlignment, type MonitorNotFound, MonitorPartNotFound } from "../domain/errors.ts"
import {
  type AlignmentMessageKind,
  type CreateMonitorRequest,
  isTerminalMonitor,
  type Monitor,
  MonitorId,
  type MonitorPatch,
  type MonitorStatus,
  type NotifyChannel,
  type Snapshot,
  type SnapshotId,
  type TickRun,
  TickRunId
} from "../domain/monitor.ts"
import type { DeliveryId, ProfileId, ScheduleId, WebhookEndpointId } from "../domain/id-schemas.ts"
import type { RunEvent } from "../store/run-log.ts"
import { MonitorEntity } from "../entities/monitor.ts"
import { Schedules } from "../schedules/schedules.ts"
import { Callbacks, type DeliveryNotRetryable, type DeliveryRow } from "../webhooks/callbacks.ts"
import { NotificationChannels } from "../webhooks/notification-channels.ts"
import { MonitorStore, type MonitorSettings } from "./monitor-store.ts"
import { checkRules, checkSchedule } from "./settings.ts"
import { MONITOR_OWNER } from "./tick.ts"
import { ProfileStore } from "../profiles/profile-store.ts"
import { makeRunCreate } from "../runs/create.ts"
import { withMethodSpans } from "../observability/spans.ts"
import type { Principal, ProjectId } from "../domain/run.ts"

const channelOf = (spec: {
  readonly kind: NotifyChannel["kind"]
  readonly url?: string | null | undefined
  readonly webhook_id?: WebhookEndpointId | null | undefined
  readonly schedule_id?: ScheduleId | null | undefined
}): NotifyChannel => ({
  kind: spec.kind,
  url: spec.url ?? null,
  webhook_id: spec.webhook_id ?? null,
  ...(spec.kind === "schedule" ? { schedule_id: spec.schedule_id ?? null } : {})
})

/** A Standard Webhooks secret: `whsec_` and 32 random bytes in base64. */
const newSecret = () => `whsec_${randomBytes(32).toString("base64")}`

const owner = (monitorId: MonitorId) => ({ kind: MONITOR_OWNER, id: monitorId })

export class Monitors extends Context.Service<Monitors, {
  readonly create: (projectId: ProjectId, keyId: Principal | null, request: CreateMonitorRequest) => Effect.Effect<Monitor, InvalidField | AlignmentNeedsModel | InsufficientCredits | BudgetExceeded | PlanLimitReached>
  readonly list: (projectId: ProjectId, options: { readonly page: number; readonly pageSize: number; readonly status?: MonitorStatus | undefined }) => Effect.Effect<{ readonly items: ReadonlyArray<Monitor>; readonly total: number }>
  readonly find: (projectId: ProjectId, monitorId: MonitorId) => Effect.Effect<Monitor, MonitorNotFound>
  readonly pause: (monitor: Monitor, reason: string | null) => Effect.Effect<Monitor, MonitorActionRefused>
  readonly resume: (monitor: Monitor, reason: string | null) => Effect.Effect<Monitor, MonitorActionRefused>
  readonly cancel: (monitor: Monitor, reason: string | null) => Effect.Effect<Monitor, MonitorActionRefused>
  readonly refine: (monitor: Monitor, patch: MonitorPatch, reason: string | null) => Effect.Effect<Monitor, MonitorActionRefused | InvalidField | AlignmentNeedsModel>
  readonly remove: (monitor: Monitor) => Effect.Effect<void>
  readonly message: (monitor: Monitor, input: { readonly content: string; readonly kind: AlignmentMessageKind }) => Effect.Effect<Monitor, MonitorNotInAlignment>
  readonly intervene: (monitor: Monitor, input: { readonly request_id: string; readonly kind: "answer" | "skip" | "abandon"; readonly response: string }) => Effect.Effect<Monitor, MonitorNotInAlignment>
  /**
   * A tick now, outside the schedule (a paused monitor too; not an ended one). MonitorNotFound (404)
   * when the monitor was deleted after it was read, before its tick was made.
   */
  readonly runNow: (monitor: Monitor) => Effect.Effect<TickRun, MonitorActionRefused | MonitorNotFound | InsufficientCredits | BudgetExceeded>
  readonly ticks: (monitor: Monitor, limit: number, beforeId: string | undefined) => Effect.Effect<ReadonlyArray<TickRun>>
  readonly tick: (monitor: Monitor, tickId: TickRunId) => Effect.Effect<TickRun, MonitorPartNotFound>
  readonly snapshots: (monitor: Monitor, limit: number, beforeId: string | undefined) => Effect.Effect<ReadonlyArray<Snapshot>>
  readonly snapshot: (monitor: Monitor, snapshotId: SnapshotId) => Effect.Effect<Snapshot, MonitorPartNotFound>
  readonly deliveries: (monitor: Monitor, limit: number, beforeId: string | undefined) => Effect.Effect<ReadonlyArray<DeliveryRow>>
  readonly retryDelivery: (monitor: Monitor, deliveryId: DeliveryId) => Effect.Effect<DeliveryRow, MonitorPartNotFound | DeliveryNotRetryable>
  /** The monitor's events after `afterId` (its event stream reads these). */
  readonly eventsAfter: (monitor: Monitor, afterId: number, limit: number) => Effect.Effect<ReadonlyArray<RunEvent>>
  /** Whether the monitor's event stream has ended: the monitor is gone, completed or canceled (read now, not as `monitor` was). */
  readonly streamEnded: (monitor: Monitor) => Effect.Effect<boolean>
  /** Dispatches a tick of a schedule slot to the monitor's entity (the scheduler's handler). */
  readonly fire: (monitorId: MonitorId, slot: Date) => Effect.Effect<void>
}>()("wa/track/Monitors") {
  static readonly layer = Layer.effect(
    Monitors,
    Effect.gen(function*() {
      const store = yield* MonitorStore
      const schedules = yield* Schedules
      const channels = yield* NotificationChannels
      const callbacks = yield* Callbacks
      const model = yield* AgentModel
      const config = yield* AppConfig
      const sql = yield* SqlClient.SqlClient
      const clientFor = yield* MonitorEntity.client
      const profiles = yield* ProfileStore
      const runCreate = yield* makeRunCreate
      const plans = yield* Plans

      const dispatchTick = (tick: TickRun) => clientFor(tick.monitor_id).Tick({ tickId: tick.id }, { discard: true }).pipe(Effect.orDie)
      const align = (monitor: Monitor) =>
        clientFor(monitor.id).Align({ monitorId: monitor.id, turn: monitor.alignment.length }, { discard: true }).pipe(Effect.orDie)

      // The scheduler's handler only hands the slot to the monitor's entity (one persisted message,
      // once per slot by its key); the entity makes the tick run and executes it.
      const fire = (monitorId: MonitorId, slot: Date) =>
        clientFor(monitorId).Fire({ monitorId, slot: slot.toISOString() }, { discard: true }).pipe(Effect.orDie)
      // The scheduler keys its owners by text: the owner id of a monitor schedule is the monitor's id.
      yield* schedules.register(MONITOR_OWNER, (ownerId, slot) => fire(MonitorId.make(ownerId), slot))
      // Every attempt at a monitor's notification shows on the monitor's event stream.
      yield* callbacks.onAttempt((attempt) =>
        attempt.monitorId === null ? Effect.void : store.appendEvent(attempt.monitorId, attempt.status === "delivered" ? "monitor.delivery.succeeded" : "monitor.delivery.failed", {
          run_id: attempt.runId,
          delivery_id: attempt.deliveryId,
          attempts: attempt.attempts,
          status_code: attempt.statusCode,
          error: attempt.error,
          final: attempt.status === "delivered" || attempt.status === "failed"
        }).pipe(Effect.asVoid)
      )

      const refuse = (monitor: Monitor, action: string) => new MonitorActionRefused({ action, status: monitor.status })

      /** The checks of settings the schema cannot make; returns the schedule in canonical form. */
      const check = Effect.fn("Monitors.check")(function*(projectId: ProjectId, input: {
        readonly schedule?: CreateMonitorRequest["schedule"]
        readonly trigger_dsl?: Record<string, unknown> | null | undefined
        readonly stop_condition_dsl?: Record<string, unknown> | null | undefined
        readonly notify_channel?: NotifyChannel | undefined
        readonly profile_id?: ProfileId | null | undefined
      }) {
        yield* checkRules(input)
        // A monitor reads its pages as the profile: it must be one of the project's (422, a field of the body).
        if (input.profile_id !== undefined && input.profile_id !== null && !(yield* profiles.exists(projectId, input.profile_id))) {
          return yield* new InvalidField({ field: ["profile_id"], detail: `no profile ${input.profile_id} in this project`, msg: "no such profile in this project", type: "not_found" })
        }
        if (input.notify_channel !== undefined) yield* channels.validateChannel(projectId, input.notify_channel)
        return input.schedule === undefined || input.schedule === null ? input.schedule : yield* checkSchedule(input.schedule, config.scheduleMinIntervalSeconds)
      })

      const transition = (monitor: Monitor, action: string, from: ReadonlyArray<MonitorStatus>, to: MonitorStatus, reason: string | null, extra: {
        readonly resetFailures?: boolean
        readonly settings?: MonitorSettings
      } = {}) =>
        store.update(monitor.id, { from, to, reason, ...extra }).pipe(
          Effect.orDie,
          Effect.flatMap(({ monitor: after, changed }) => changed ? Effect.succeed(after) : Effect.fail(refuse(after, action)))
        )

      return Monitors.of({
        ...withMethodSpans<Pick<Monitors["Service"], "list" | "find" | "ticks" | "tick" | "snapshots" | "snapshot" | "deliveries" | "eventsAfter" | "streamEnded" | "fire">>("Monitors", {
          list: (projectId, options) => store.list(projectId, { offset: (options.page - 1) * options.pageSize, limit: options.pageSize, status: options.status }),
          find: (projectId, monitorId) => store.find(projectId, monitorId),
          ticks: (monitor, limit, beforeId) => store.listTicks(monitor.id, limit, beforeId),
          tick: (monitor, tickId) =>
            store.findTick(monitor.id, tickId).pipe(
              Effect.flatMap((tick) => tick === undefined ? Effect.fail(new MonitorPartNotFound({ what: "run", id: tickId, monitorId: monitor.id })) : Effect.succeed(tick))
            ),
          snapshots: (monitor, limit, beforeId) => store.listSnapshots(monitor.id, limit, beforeId),
          snapshot: (monitor, snapshotId) =>
            store.findSnapshot(monitor.id, snapshotId).pipe(
              Effect.flatMap((snapshot) =>
                snapshot === undefined ? Effect.fail(new MonitorPartNotFound({ what: "snapshot", id: snapshotId, monitorId: monitor.id })) : Effect.succeed(snapshot)
              )
            ),
          deliveries: (monitor, limit, beforeId) => callbacks.list(monitor.project_id, { monitorId: monitor.id, limit, beforeId }),
          eventsAfter: (monitor, afterId, limit) => store.eventsAfter(monitor.id, afterId, limit),
          streamEnded: (monitor) => Effect.map(store.get(monitor.id), (row) => row === undefined || isTerminalMonitor(row.status)),
          fire
        }),
        create: Effect.fn("Monitors.create")(function*(projectId: ProjectId, keyId: Principal | null, request: CreateMonitorRequest) {
          const channel = channelOf(request.notify_channel)
          // Direct mode has a schedule (its first tick is the schedule's, at once); alignment mode
          // starts with the supervisor's first step.
          const direct = request.schedule !== undefined && request.schedule !== null
          // The run kernel's create (src/runs/create.ts): the retry of a keyed create whose first
          // attempt committed before its process died gets that monitor (its schedule was set in the
          // same transaction; alignment started if it never was); else the rules, the 402
          // pre-check, the insert with the plan's cap and the claim's record, and the first step.
          const monitor = yield* runCreate.createWith({
            projectId,
            existing: (id) => store.find(projectId, MonitorId.make(id)).pipe(Effect.catchTag("MonitorNotFound", () => Effect.succeed(undefined))),
            check: Effect.gen(function*() {
              const schedule = yield* check(projectId, { ...request, notify_channel: channel })
              if (!direct && Option.isNone(model)) return yield* new AlignmentNeedsModel()
              return { schedule: schedule ?? null, limit: (yield* plans.capsFor(projectId)).projectMonitors }
            }),
            // 402 before anything is created (budget cap reached, or credits below the minimum).
            admit: true,
            insert: ({ schedule, limit }) =>
              Effect.gen(function*() {
                // The plan's cap on monitors not ended: the project's creates count and insert one at a time, on every node.
                const open = yield* store.countOpenForCreate(projectId)
                if (open >= limit) return yield* new PlanLimitReached({ resource: "monitors", count: open, limit })
                const created = yield* store.create({
                  projectId,
                  createdByKeyId: keyId,
                  status: direct ? "active" : "pending_clarification",
                  intent: request.intent,
                  channel,
                  notifySecret: newSecret(),
                  schedule,
                  targetUrls: request.target_urls ?? null,
                  extractionSchema: request.extraction_schema ?? null,
                  triggerDsl: request.trigger_dsl ?? null,
                  stopConditionDsl: request.stop_condition_dsl ?? null,
                  profileId: request.profile_id ?? null
                })
                // The first tick runs at once (the baseline), then on the schedule.
                if (schedule !== null) yield* schedules.set(owner(created.id), schedule, { anchor: created.created_at, firstAt: created.created_at })
                return created
              }),
            idOf: (created) => created.id,
            handoff: (created) => direct ? undefined : { entityType: "Monitor", entityId: created.id, tag: "Align" },
            dispatch: (created) => direct ? Effect.void : align(created)
          })
          yield* Effect.logInfo("monitor created").pipe(Effect.annotateLogs({ monitor_id: monitor.id, mode: direct ? "direct" : "alignment" }))
          return monitor
        }),
        pause: Effect.fn("Monitors.pause")(function*(monitor: Monitor, reason: string | null) {
          const after = yield* transition(monitor, "pause", ["active", "failing"], "paused", reason)
          yield* schedules.pause(owner(monitor.id))
          return after
        }),
        resume: Effect.fn("Monitors.resume")(function*(monitor: Monitor, reason: string | null) {
          // A failing monitor is resumed too: its failure count starts again.
          const after = yield* transition(monitor, "resume", ["paused", "failing"], "active", reason, { resetFailures: true })
          yield* schedules.resume(owner(monitor.id))
          return after
        }),
        cancel: Effect.fn("Monitors.cancel")(function*(monitor: Monitor, reason: string | null) {
          const after = yield* transition(monitor, "cancel", ["pending_clarification", "active", "paused", "failing"], "canceled", reason ?? "user_canceled")
          yield* schedules.remove(owner(monitor.id))
          return after
        }),
        refine: Effect.fn("Monitors.refine")(function*(monitor: Monitor, patch: MonitorPatch, reason: string | null) {
          if (isTerminalMonitor(monitor.status)) return yield* refuse(monitor, "refine")
          const channel = patch.notify_channel === undefined ? undefined : channelOf(patch.notify_channel)
          const schedule = yield* check(monitor.project_id, { ...patch, notify_channel: channel })
          const settings: MonitorSettings = {
            ...(patch.intent === undefined ? {} : { intent_text: patch.intent }),
            ...(channel === undefined ? {} : { notify_channel: channel }),
            ...("schedule" in patch ? { schedule: schedule ?? null } : {}),
            ...("target_urls" in patch ? { target_urls: patch.target_urls ?? null } : {}),
            ...("extraction_schema" in patch ? { extraction_schema: patch.extraction_schema ?? null } : {}),
            ...("trigger_dsl" in patch ? { trigger_dsl: patch.trigger_dsl ?? null } : {}),
            ...("stop_condition_dsl" in patch ? { stop_condition_dsl: patch.stop_condition_dsl ?? null } : {}),
            ...("profile_id" in patch ? { profile_id: patch.profile_id ?? null } : {})
          }
          const nextSchedule = "schedule" in settings ? settings.schedule ?? null : monitor.schedule
          // A monitor without a schedule goes back to alignment; one aligning that gets a schedule is active.
          if (nextSchedule === null && Option.isNone(model)) return yield* new AlignmentNeedsModel()
          const to: MonitorStatus = nextSchedule === null
            ? "pending_clarification"
            : monitor.status === "pending_clarification" || monitor.status === "failing" ? "active" : monitor.status
          const after = yield* sql.withTransaction(Effect.gen(function*() {
            const refined = yield* transition(monitor, "refine", [monitor.status], to, reason ?? (to !== monitor.status ? "refined" : monitor.status_reason), {
              settings,
              resetFailures: true
            })
            if (nextSchedule === null) yield* schedules.remove(owner(monitor.id))
            else if ("schedule" in settings || monitor.status === "pending_clarification") {
              yield* schedules.set(owner(monitor.id), nextSchedule, { anchor: new Date(), ...(monitor.status === "pending_clarification" ? { firstAt: new Date() } : {}) })
              if (to === "paused") yield* schedules.pause(owner(monitor.id))
            }
            return refined
          })).pipe(Effect.catchTag("SqlError", (error) => Effect.die(error)))
          if (after.status === "pending_clarification" && monitor.status !== "pending_clarification") yield* align(after)
          return after
        }),
        remove: Effect.fn("Monitors.remove")(function*(monitor: Monitor) {
          yield* sql.withTransaction(Effect.gen(function*() {
            yield* schedules.remove(owner(monitor.id))
            yield* store.remove(monitor.id)
          })).pipe(Effect.orDie)
        }),
        message: Effect.fn("Monitors.message")(function*(monitor: Monitor, input: { readonly content: string; readonly kind: AlignmentMessageKind }) {
          if (monitor.status !== "pending_clarification") return yield* new MonitorNotInAlignment({ monitorId: monitor.id, status: monitor.status })
          const { monitor: after, changed } = yield* store.update(monitor.id, {
            from: ["pending_clarification"],
            alignment: [...monitor.alignment, { role: "user", content: input.content, kind: input.kind }],
            events: [{ type: "alignment.message", data: { role: "user", kind: input.kind, content: input.content } }]
          }).pipe(Effect.orDie)
          if (!changed) return yield* new MonitorNotInAlignment({ monitorId: monitor.id, status: after.status })
          yield* align(after)
          return after
        }),
        intervene: Effect.fn("Monitors.intervene")(function*(monitor: Monitor, input: { readonly request_id: string; readonly kind: "answer" | "skip" | "abandon"; readonly response: string }) {
          if (monitor.status !== "pending_clarification") return yield* new MonitorNotInAlignment({ monitorId: monitor.id, status: monitor.status })
          if (monitor.pending_question?.request_id !== input.request_id) {
            return yield* new MonitorNotInAlignment({ monitorId: monitor.id, status: monitor.status, requestId: input.request_id })
          }
          if (input.kind === "abandon") {
            const { monitor: after, changed } = yield* store.update(monitor.id, {
              from: ["pending_clarification"],
              to: "canceled",
              reason: "user_abandoned_alignment",
              pendingQuestion: null,
              events: [{ type: "alignment.abandoned", data: { request_id: input.request_id } }]
            }).pipe(Effect.orDie)
            if (!changed) return yield* new MonitorNotInAlignment({ monitorId: monitor.id, status: after.status })
            return after
          }
          const content = input.kind === "skip" ? "(the user skipped this question; decide yourself)" : input.response
          const { monitor: after, changed } = yield* store.update(monitor.id, {
            from: ["pending_clarification"],
            alignment: [...monitor.alignment, { role: "user", content, request_id: input.request_id, kind: input.kind }],
            pendingQuestion: null,
            events: [{ type: "alignment.answered", data: { request_id: input.request_id, kind: input.kind, response: input.response } }]
          }).pipe(Effect.orDie)
          if (!changed) return yield* new MonitorNotInAlignment({ monitorId: monitor.id, status: after.status })
          yield* align(after)
          return after
        }),
        runNow: Effect.fn("Monitors.runNow")(function*(monitor: Monitor) {
          // The run kernel's create of the tick run: a keyed retry gets the tick its first attempt
          // made (dispatched if it never was); else an ended monitor is refused, then the 402
          // pre-check, the insert and the claim's record, and the tick's dispatch.
          return yield* runCreate.createWith({
            projectId: monitor.project_id,
            existing: (id) => store.findTick(monitor.id, TickRunId.make(id)),
            check: isTerminalMonitor(monitor.status) ? Effect.fail(refuse(monitor, "run_now")) : Effect.void,
            admit: true,
            insert: () => store.createTick(monitor, "run_now", null),
            idOf: (tick) => tick.id,
            // A tick that ended was executed; the Monitor entity gets one Tick per tick run, named by its id.
            handoff: (tick) => tick.status !== "running" ? undefined : { entityType: "Monitor", entityId: tick.monitor_id, tag: "Tick", payloadHas: tick.id },
            dispatch: dispatchTick
          })
        }),
        retryDelivery: Effect.fn("Monitors.retryDelivery")(function*(monitor: Monitor, deliveryId: DeliveryId) {
          const row = yield* callbacks.find(monitor.project_id, deliveryId)
          if (row === undefined || row.monitor_id !== monitor.id) return yield* new MonitorPartNotFound({ what: "delivery", id: deliveryId, monitorId: monitor.id })
          const retried = yield* callbacks.retry(monitor.project_id, deliveryId)
          if (retried === undefined) return yield* new MonitorPartNotFound({ what: "delivery", id: deliveryId, monitorId: monitor.id })
          return retried
        })
      })
    })
  ).pipe(Layer.provide(Layer.mergeAll(ProfileStore.layer, Budget.layer, Plans.layer)))
}

export type { MonitorId }
