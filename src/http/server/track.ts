/** Handlers of Track monitors (both conventions), over the Monitors service. */
import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { AppConfig } from "../../config/config.ts"
import type { MonitorId } from "../../domain/monitor.ts"
import { Monitors } from "../../track/service.ts"
import { RunEvents } from "../../runs/events.ts"
import { WebAgentApi } from "../api/api.ts"
import { CurrentKey } from "../api/security.ts"
import { httpErrors } from "../domain-errors.ts"
import { cursorPage } from "../pagination.ts"
import { eventStream, parseLastEventId } from "../sse.ts"
import { createdMonitorView, monitorView, snapshotView, tickRunView } from "../views/monitor-view.ts"
import { deliveryView } from "./webhook-deliveries.ts"

const common = Effect.gen(function*() {
  const monitors = yield* Monitors
  const config = yield* AppConfig
  const context = yield* Effect.context<RunEvents>()
  const find = (monitorId: MonitorId) => CurrentKey.use(({ projectId }) => httpErrors(monitors.find(projectId, monitorId)))
  const create = (payload: Parameters<typeof monitors.create>[2]) =>
    Effect.gen(function*() {
      const { projectId, keyId } = yield* CurrentKey
      const monitor = yield* httpErrors(monitors.create(projectId, keyId, payload))
      return HttpServerResponse.jsonUnsafe(createdMonitorView(monitor), { status: 201 })
    })
  const events = (monitorId: MonitorId, lastEventId: string | undefined) =>
    find(monitorId).pipe(Effect.flatMap((monitor) =>
      eventStream({
        key: monitor.id,
        read: (_key, afterId, limit) => monitors.eventsAfter(monitor, afterId, limit),
        ended: monitors.streamEnded(monitor),
        isLast: (event) => event.type === "monitor.status_changed" && (event.data.to === "completed" || event.data.to === "canceled")
      }, parseLastEventId(lastEventId), config).pipe(Effect.provide(context))
    ))
  return { monitors, find, create, events }
})

export const TrackHandlers = HttpApiBuilder.group(
  WebAgentApi,
  "track",
  Effect.fn(function*(handlers) {
    const { monitors, find, create, events } = yield* common
    return handlers
      .handle("createMonitor", ({ payload }) => create(payload))
      .handle("listMonitors", ({ query }) =>
        Effect.gen(function*() {
          const { projectId } = yield* CurrentKey
          const page = query.page ?? 1
          const pageSize = query.page_size ?? 20
          const { items, total } = yield* monitors.list(projectId, { page, pageSize, status: query.status })
          return { items: items.map(monitorView), total, page, page_size: pageSize, has_more: page * pageSize < total }
        }))
      .handle("getMonitor", ({ params }) => find(params.mid).pipe(Effect.map(monitorView)))
      .handle("patchMonitor", ({ params, payload }) =>
        find(params.mid).pipe(
          Effect.flatMap((monitor) => {
            const reason = payload.reason ?? null
            switch (payload.action) {
              case "pause":
                return httpErrors(monitors.pause(monitor, reason))
              case "resume":
                return httpErrors(monitors.resume(monitor, reason))
              case "cancel":
                return httpErrors(monitors.cancel(monitor, reason))
              case "refine":
                return httpErrors(monitors.refine(monitor, payload.patch!, reason))
            }
          }),
          Effect.map(monitorView)
        ))
      .handle("deleteMonitor", ({ params }) => find(params.mid).pipe(Effect.flatMap((monitor) => monitors.remove(monitor))))
      .handle("messageMonitor", ({ params, payload }) =>
        find(params.mid).pipe(
          Effect.flatMap((monitor) => httpErrors(monitors.message(monitor, { content: payload.content, kind: payload.kind ?? "user_clarification" }))),
          Effect.map((monitor) => HttpServerResponse.jsonUnsafe(monitorView(monitor), { status: 202 }))
        ))
      .handle("interveneMonitor", ({ params, payload }) =>
        find(params.mid).pipe(
          Effect.flatMap((monitor) =>
            httpErrors(monitors.intervene(monitor, { request_id: payload.request_id, kind: payload.kind ?? "answer", response: payload.response ?? "" }))
          ),
          Effect.map(monitorView)
        ))
      .handle("runNow", ({ params }) =>
        find(params.mid).pipe(
          Effect.flatMap((monitor) => httpErrors(monitors.runNow(monitor))),
          Effect.map((tick) => HttpServerResponse.jsonUnsafe(tickRunView(tick), { status: 202 }))
        ))
      .handle("monitorEvents", ({ params, headers }) => events(params.mid, headers["last-event-id"]))
      .handle("listRuns", ({ params, query }) =>
        find(params.mid).pipe(Effect.flatMap((monitor) => cursorPage(query, (limit, beforeId) => monitors.ticks(monitor, limit, beforeId), tickRunView))))
      .handle("getRun", ({ params }) =>
        find(params.mid).pipe(Effect.flatMap((monitor) => httpErrors(monitors.tick(monitor, params.run_id))), Effect.map(tickRunView)))
      .handle("listSnapshots", ({ params, query }) =>
        find(params.mid).pipe(Effect.flatMap((monitor) =>
          cursorPage(query, (limit, beforeId) => monitors.snapshots(monitor, limit, beforeId), (snapshot) => snapshotView(snapshot, false))
        )))
      .handle("getSnapshot", ({ params }) =>
        find(params.mid).pipe(
          Effect.flatMap((monitor) => httpErrors(monitors.snapshot(monitor, params.snapshot_id))),
          Effect.map((snapshot) => snapshotView(snapshot, true))
        ))
      .handle("listDeliveries", ({ params, query }) =>
        find(params.mid).pipe(Effect.flatMap((monitor) => cursorPage(query, (limit, beforeId) => monitors.deliveries(monitor, limit, beforeId), deliveryView))))
      .handle("retryDelivery", ({ params }) =>
        find(params.mid).pipe(
          Effect.flatMap((monitor) => httpErrors(monitors.retryDelivery(monitor, params.delivery_id))),
          Effect.map((row) => HttpServerResponse.jsonUnsafe(deliveryView(row), { status: 202 }))
        ))
  })
)

export const TrackFlatHandlers = HttpApiBuilder.group(
  WebAgentApi,
  "track_flat",
  Effect.fn(function*(handlers) {
    const { find, create, events } = yield* common
    return handlers
      .handle("createMonitor", ({ payload }) => create(payload))
      .handle("getMonitor", ({ params }) => find(params.mid).pipe(Effect.map(monitorView)))
      .handle("monitorEvents", ({ params, headers }) => events(params.mid, headers["last-event-id"]))
  })
)
