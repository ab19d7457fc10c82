/**
 * The Session entity's definition (Effect Cluster), one per DoAnything session: a persisted
 * `Execute`, and `Interrupt`, `Close`, `ControlFrames`, `ControlInput` beside it. Its behaviour, the
 * DoAnything executor, is src/do-anything/executor.ts.
 */
import { Schema } from "effect"
import { ClusterSchema, Entity } from "effect/cluster"
import { Rpc } from "effect/rpc"
import { LiveFrame, LiveInput } from "../browser/live-view.ts"
import { LiveViewUnavailable } from "../control/live-control.ts"
import { RunId } from "../domain/run.ts"
import { ControlGrantId } from "../domain/id-schemas.ts"

export const Execute = Rpc.make("Execute", { payload: { runId: RunId } })
  .annotate(ClusterSchema.Persisted, true)
export const Interrupt = Rpc.make("Interrupt", { payload: { runId: RunId } })
export const Close = Rpc.make("Close")

/** Take control: the live frames of the session's page, for a control page holding an active grant. */
export const ControlFrames = Rpc.make("ControlFrames", {
  payload: { grantId: ControlGrantId },
  success: LiveFrame,
  error: LiveViewUnavailable,
  stream: true
})
/** Take control: the person's input, in order, for the session's page. */
export const ControlInput = Rpc.make("ControlInput", {
  payload: { grantId: ControlGrantId, inputs: Schema.Array(LiveInput) },
  error: LiveViewUnavailable
})

export const SessionEntity = Entity.make("Session", [Execute, Interrupt, Close, ControlFrames, ControlInput])
