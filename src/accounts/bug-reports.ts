/**
 * Bug reports of a project, filed from the console (by a signed-in user) or by any client with a
 * key of the project. A screenshot is an image data URL (`data:image/png|jpeg|webp;base64,...`)
 * of at most WA_BUG_REPORT_SCREENSHOT_MAX_BYTES characters. Status starts `open` (the spec names
 * no other values; `open` and `closed` are what this service uses).
 */
import { Context, Effect, Layer } from "effect"
import { AppConfig } from "../config/config.ts"
import { BugReportStore, type BugReportRow, type InputMethod } from "./bug-report-store.ts"
import { AccountInvalidField } from "./errors.ts"
import { withMethodSpans } from "../observability/spans.ts"
import type { ApiKeyId, ProjectId } from "../domain/run.ts"
import type { UserId } from "../domain/id-schemas.ts"

export type { BugReportRow, InputMethod } from "./bug-report-store.ts"

export interface NewBugReport {
  readonly message: string
  readonly page_path: string
  readonly input_method: InputMethod
  readonly screenshot_data_url: string | null
  readonly user_agent: string | null
  readonly viewport_width: number | null
  readonly viewport_height: number | null
}

/** Who files or reads: a console user (their id) or an API key (its id). */
export interface Reporter {
  readonly userId: UserId | null
  readonly apiKeyId: ApiKeyId | null
}

const dataUrlPattern = /^data:image\/(png|jpeg|webp);base64,[A-Za-z0-9+/]+={0,2}$/

export class BugReports extends Context.Service<BugReports, {
  readonly create: (projectId: ProjectId, reporter: Reporter, report: NewBugReport) => Effect.Effect<BugReportRow, AccountInvalidField>
  /** Newest first; `onlyUserId` limits the list to one user's reports (a tenant member's view). */
  readonly list: (projectId: ProjectId, onlyUserId: UserId | null, limit: number, beforeId: string | undefined) => Effect.Effect<{
    readonly rows: ReadonlyArray<BugReportRow>
    readonly total: number
  }>
}>()("wa/accounts/BugReports") {
  static readonly layer = Layer.effect(
    BugReports,
    Effect.gen(function*() {
      const store = yield* BugReportStore
      const config = yield* AppConfig

      const create = Effect.fn("BugReports.create")(function*(projectId: ProjectId, reporter: Reporter, report: NewBugReport) {
        const screenshot = report.screenshot_data_url
        if (screenshot !== null) {
          if (screenshot.length > config.bugReportScreenshotMaxBytes) {
            return yield* new AccountInvalidField({
              field: "screenshot_data_url",
              detail: `screenshot_data_url is ${screenshot.length} characters; at most ${config.bugReportScreenshotMaxBytes} are accepted`
            })
          }
          if (!dataUrlPattern.test(screenshot)) {
            return yield* new AccountInvalidField({
              field: "screenshot_data_url",
              detail: "screenshot_data_url must be a base64 data URL of a PNG, JPEG or WebP image (data:image/png;base64,...)"
            })
          }
        }
        return yield* store.insertOnce({
          projectId,
          userId: reporter.userId,
          apiKeyId: reporter.apiKeyId,
          message: report.message,
          page_path: report.page_path,
          input_method: report.input_method,
          screenshot_data_url: screenshot,
          user_agent: report.user_agent,
          viewport_width: report.viewport_width,
          viewport_height: report.viewport_height
        })
      })

      const list = store.page

      return BugReports.of({
        ...withMethodSpans("BugReports", { list }), create })
    })
  ).pipe(Layer.provide(BugReportStore.layer))
}
