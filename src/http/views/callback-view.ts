/**
 * The body of a run's terminal callback: the run as its product's GET shows it, in the convention
 * of the route that created the run (its request's `convention`: "B" for `/api/v1/...`).
 */
import type { Run } from "../../domain/run.ts"
import { researchRunView } from "./research-view.ts"
import { flatRunView, runView } from "./run-view.ts"
import { webSearchRunView } from "./web-search-view.ts"

export const callbackView = (run: Run): unknown => {
  switch (run.request._tag) {
    case "DeepResearch":
      return researchRunView(run, run.request, { flat: run.request.convention === "B" })
    case "WebSearch":
      return webSearchRunView(run, false)
    case "DoAnything":
      return run.request.convention === "B" ? flatRunView(run) : runView(run)
  }
}
