/**
 * The Monitor entity (Effect Cluster), one per monitor: it executes the monitor's ticks and its
 * alignment steps, one at a time. Both messages are persisted with a primary key (the tick run's
 * id; the monitor and the alignment turn), so a message sent twice (a scheduler re-dispatching a
 * firing after a crash) is stored once, and a message under way when its runner dies is delivered
 * again on the runner that holds the shard next. Its behaviour is bound in src/track/live.ts:
 * `Tick` and `Fire` (after making its slot's tick run) execute the tick run through the run
 * kernel's lifecycle (src/runs/kernel.ts `makeRunExecution`) with Track's tick executor
 * (src/track/tick.ts), `Align` goes to the supervisor; all are idempotent: a tick that ended only
 * makes sure its notification was recorded; an alignment turn already answered is skipped.
 * The payloads carry the ids branded (a brand is type-level: persisted, they are the same text).
 */
import { Schema } from "effect"
import { ClusterSchema, Entity } from "effect/cluster"
import { Rpc } from "effect/rpc"
import { MonitorId, TickRunId } from "../domain/monitor.ts"

export const Tick = Rpc.make("Tick", {
  payload: { tickId: TickRunId },
  primaryKey: (payload) => payload.tickId
}).annotate(ClusterSchema.Persisted, true)

/** The tick of a schedule slot (sent by the scheduler's handler; once per slot by its key). */
export const Fire = Rpc.make("Fire", {
  payload: { monitorId: MonitorId, slot: Schema.String },
  primaryKey: (payload) => `${payload.monitorId}@${payload.slot}`
}).annotate(ClusterSchema.Persisted, true)

/** Runs the supervisor once for the monitor's conversation as it is after `turn` turns. */
export const Align = Rpc.make("Align", {
  payload: { monitorId: MonitorId, turn: Schema.Int },
  primaryKey: (payload) => `${payload.monitorId}:${payload.turn}`
}).annotate(ClusterSchema.Persisted, true)

export const MonitorEntity = Entity.make("Monitor", [Tick, Fire, Align])
