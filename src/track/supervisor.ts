/**
 * Executes alignment steps (see alignment.ts): asks the model, then either records its question
 * (`alignment.input_request`) or applies its configuration and makes the monitor `active` with
 * its schedule, in one transaction.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { AgentModel } from "../agent/model.ts"
import { AppConfig } from "../config/config.ts"
import { makeId } from "../domain/ids.ts"
import { type AlignmentTurn, type MonitorId, MonitorPatch } from "../domain/monitor.ts"
import { Schedules } from "../schedules/schedules.ts"
import { supervisorStep } from "./alignment.ts"
import { Ledger } from "../billing/ledger.ts"
import { toMicros } from "../domain/money.ts"
import { MonitorStore } from "./monitor-store.ts"
import { checkRules, checkSchedule } from "./settings.ts"
import { MONITOR_OWNER } from "./tick.ts"

const decodeSettings = Schema.decodeUnknownEffect(MonitorPatch)

/** Attempts at a valid configuration per step before the supervisor must ask the user instead. */
const CONFIGURE_ATTEMPTS = 3

export class Supervisor extends Context.Service<Supervisor, {
  readonly step: (monitorId: MonitorId, turn: number) => Effect.Effect<void>
}>()("wa/track/Supervisor") {
  static readonly layer = Layer.effect(
    Supervisor,
    Effect.gen(function*() {
      const store = yield* MonitorStore
      const model = yield* AgentModel
      const schedules = yield* Schedules
      const config = yield* AppConfig
      const sql = yield* SqlClient.SqlClient
      const ledger = yield* Ledger

      const step = Effect.fn("Supervisor.step")(function*(monitorId: MonitorId, turn: number) {
        const monitor = yield* store.get(monitorId)
        // Ended, aligned, or a newer turn exists (its own message runs the supervisor): nothing to do.
        if (monitor === undefined || monitor.status !== "pending_clarification" || monitor.alignment.length !== turn) return
        if (monitor.alignment.at(-1)?.role === "supervisor") return
        if (Option.isNone(model)) return
        const rejected: Array<string> = []
        for (let attempt = 0; attempt < CONFIGURE_ATTEMPTS; attempt++) {
          const { answer, costUsd } = yield* supervisorStep(model.value, monitor, rejected)
          // The supervisor's tokens, once per (monitor, turn, attempt): a step run again after a
          // crash asks the model again, but is not charged twice.
          if (ledger.enabled) {
            yield* ledger.charge({
              projectId: monitor.project_id,
              kind: "charge_llm",
              micros: toMicros(costUsd),
              idempotencyKey: `llm:${monitor.id}:align:${turn}:${attempt}`,
              force: true
            })
          }
          if (answer.kind === "ask") {
            const requestId = makeId("ir")
            const asked: AlignmentTurn = { role: "supervisor", content: answer.question, request_id: requestId }
            yield* store.update(monitor.id, {
              from: ["pending_clarification"],
              alignment: [...monitor.alignment, asked],
              pendingQuestion: { request_id: requestId, question: answer.question },
              events: [{ type: "alignment.input_request", data: { request_id: requestId, question: answer.question, monitor_id: monitor.id } }]
            })
            return
          }
          const decoded = yield* Effect.result(decodeSettings(answer.settings, { errors: "all", onExcessProperty: "ignore" }))
          if (decoded._tag === "Failure") {
            rejected.push(decoded.failure.message.slice(0, 1000))
            continue
          }
          const settings = decoded.success
          if (settings.schedule === undefined || settings.schedule === null) {
            rejected.push("schedule is required")
            continue
          }
          const checked = yield* Effect.result(Effect.gen(function*() {
            yield* checkRules(settings)
            return yield* checkSchedule(settings.schedule!, config.scheduleMinIntervalSeconds)
          }))
          if (checked._tag === "Failure") {
            rejected.push(checked.failure.detail)
            continue
          }
          const schedule = checked.success
          const done: AlignmentTurn = { role: "supervisor", content: "configured" }
          yield* sql.withTransaction(Effect.gen(function*() {
            const { changed } = yield* store.update(monitor.id, {
              from: ["pending_clarification"],
              to: "active",
              reason: "aligned",
              settings: {
                schedule,
                target_urls: settings.target_urls ?? null,
                extraction_schema: settings.extraction_schema ?? null,
                trigger_dsl: settings.trigger_dsl ?? null,
                stop_condition_dsl: settings.stop_condition_dsl ?? null
              },
              alignment: [...monitor.alignment, done],
              pendingQuestion: null,
              events: [{
                type: "alignment.completed",
                data: { schedule, target_urls: settings.target_urls ?? null, extraction_schema: settings.extraction_schema ?? null, trigger_dsl: settings.trigger_dsl ?? null, stop_condition_dsl: settings.stop_condition_dsl ?? null }
              }]
            })
            // The first tick runs at once (the baseline), then on the schedule.
            if (changed) yield* schedules.set({ kind: MONITOR_OWNER, id: monitor.id }, schedule, { firstAt: new Date() })
          })).pipe(Effect.orDie)
          return
        }
        // No valid configuration: say so and ask the user for what is missing.
        const requestId = makeId("ir")
        const question = `I could not set this monitor up (${rejected.at(-1) ?? "invalid configuration"}). Which pages should I watch, and how often?`
        yield* store.update(monitor.id, {
          from: ["pending_clarification"],
          alignment: [...monitor.alignment, { role: "supervisor", content: question, request_id: requestId }],
          pendingQuestion: { request_id: requestId, question },
          events: [{ type: "alignment.input_request", data: { request_id: requestId, question, monitor_id: monitor.id } }]
        })
      }, Effect.catchCause((cause) => Effect.logError("monitor alignment step failed", cause)))

      return Supervisor.of({ step })
    })
  ).pipe(Layer.provide(Ledger.layer))
}
