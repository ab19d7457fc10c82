/**
 * Reading pages as a profile (Track monitors with `profile_id`): the pages are rendered in one
 * fresh browser context started from the profile's saved state, instead of the Reader's plain
 * HTTP fetch, so a members-only page shows what the signed-in user sees. The monitor only reads:
 * it takes no lease on the profile and saves nothing back.
 */
import { Effect, Result } from "effect"
import { BrowserPool } from "../browser/pool.ts"
import { htmlText } from "../reader/html-text.ts"
import { ProfileStore } from "./profile-store.ts"
import type { ProjectId } from "../domain/run.ts"
import type { ProfileId } from "../domain/profile.ts"

export interface PageRead {
  readonly finalUrl: string
  readonly method: "http" | "browser"
  readonly text: string
}

export const readPagesAsProfile = (projectId: ProjectId, profileId: ProfileId, urls: ReadonlyArray<string>, allowPrivateNetworks: boolean) =>
  Effect.gen(function*() {
    const profiles = yield* ProfileStore
    const pool = yield* BrowserPool
    // A deleted profile fails the tick rather than reading the pages signed out.
    if (!(yield* profiles.exists(projectId, profileId))) return urls.map(() => Result.fail({ message: `profile ${profileId} no longer exists` }))
    const loaded = yield* Effect.result(profiles.loadState(profileId))
    if (Result.isFailure(loaded)) {
      return urls.map(() => Result.fail({ message: `the profile's saved state could not be read: ${loaded.failure.reason}` }))
    }
    const reads = yield* Effect.scoped(Effect.gen(function*() {
      const lease = yield* pool.acquireContext({
        allowPrivateNetworks,
        ...(loaded.success === undefined ? {} : { storageState: loaded.success as never })
      })
      return yield* Effect.forEach(urls, (url) =>
        Effect.tryPromise(async () => {
          const page = await lease.context.newPage()
          try {
            const response = await page.goto(url, { waitUntil: "domcontentloaded", timeout: 30_000 })
            await page.waitForLoadState("load", { timeout: 5_000 }).catch(() => undefined)
            const status = response?.status() ?? 200
            if (status >= 400) throw new Error(`HTTP ${status}`)
            return { finalUrl: page.url(), method: "browser" as const, text: htmlText(await page.content()).text }
          } finally {
            await page.close().catch(() => undefined)
          }
        }).pipe(
          Effect.mapError((error) => ({ message: String((error as { message?: unknown }).message ?? error).split("\n")[0]! })),
          Effect.result
        ))
    })).pipe(Effect.catch((error) => Effect.succeed(urls.map(() => Result.fail({ message: error.message })))))
    return reads as ReadonlyArray<Result.Result<PageRead, { readonly message: string }>>
  })
