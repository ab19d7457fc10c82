/** The body of a run's terminal callback: the run as its product's GET shows it. */
import type { Run } from "../../domain/run.ts"
import { researchRunView } from "./research-view.ts"
import { runView } from "./run-view.ts"
import { webSearchRunView } from "./web-search-view.ts"

export const callbackView = (run: Run): unknown => {
  switch (run.request._tag) {
    case "DeepResearch":
      return researchRunView(run, run.request)
    case "WebSearch":
      return webSearchRunView(run, false)
    case "DoAnything":
      return runView(run)
  }
}
