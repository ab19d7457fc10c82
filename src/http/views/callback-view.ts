/**
 * The body of a run's terminal callback: the run as its product's GET shows it, in the convention
 * of the route that created the run (its request's `convention`: "B" for `/api/v1/...`); a
 * `run.completed` webhook body's data (src/domain/wire/webhook-payloads.ts). WebSearch runs and
 * Track ticks have no callback: undefined.
 */
import type { Run } from "../../domain/run.ts"
import type { RunCompletedData } from "../../domain/wire/webhook-payloads.ts"
import { researchRunView } from "./research-view.ts"
import { flatRunView, runView } from "./run-view.ts"

export const callbackView = (run: Run): RunCompletedData | undefined => {
  switch (run.request._tag) {
    case "DeepResearch":
      return run.request.convention === "B" ? researchRunView(run, run.request, { flat: true }) : researchRunView(run, run.request)
    case "DoAnything":
      return run.request.convention === "B" ? flatRunView(run) : runView(run)
    default:
      return undefined
  }
}
