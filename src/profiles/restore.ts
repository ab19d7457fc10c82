/**
 * Loading a saved storage state into a new browser context, fast. Playwright restores cookies
 * cheaply, but restores each origin's local storage and IndexedDB by opening a page per origin
 * (about +120 ms per context on the bench machine). Here:
 * - cookies, and the origins that have IndexedDB, go through Playwright's `storageState`;
 * - local storage of the other origins is written by a context init script, in the first document
 *   of that origin the context loads, before the page's own scripts run. Once an origin's first
 *   document loaded, the script forgets it (so a page that clears its storage later is not
 *   refilled); the script also never writes into an origin whose storage is not empty.
 */
import type { BrowserContext, Disposable, Page } from "playwright-core"

interface OriginState {
  readonly origin: string
  readonly localStorage?: ReadonlyArray<{ readonly name: string; readonly value: string }>
  readonly indexedDB?: ReadonlyArray<unknown>
}

interface StorageState {
  readonly cookies?: ReadonlyArray<unknown>
  readonly origins?: ReadonlyArray<OriginState>
}

export interface PreparedRestore {
  /** What to pass as the context's `storageState` (undefined: nothing). */
  readonly storageState: unknown
  /** Installs the rest into the opened context. */
  readonly apply: (context: BrowserContext) => Promise<void>
}

const nothing: PreparedRestore = { storageState: undefined, apply: () => Promise.resolve() }

/** The in-page part: `saved` maps origin → [name, value] pairs. */
const writeLocalStorage = (saved: Record<string, Array<[string, string]>>) => {
  try {
    const entries = saved[location.origin]
    if (entries === undefined || localStorage.length > 0) return
    for (const [name, value] of entries) localStorage.setItem(name, value)
  } catch {
    // Storage unavailable for this document (opaque origin, sandboxed frame).
  }
}

export const prepareRestore = (state: unknown): PreparedRestore => {
  if (state === undefined || state === null || typeof state !== "object") return nothing
  const { cookies = [], origins = [] } = state as StorageState
  const withIndexedDb = origins.filter((o) => (o.indexedDB?.length ?? 0) > 0)
  const localOnly = origins.filter((o) => (o.indexedDB?.length ?? 0) === 0 && (o.localStorage?.length ?? 0) > 0)
  const storageState = cookies.length === 0 && withIndexedDb.length === 0 ? undefined : { cookies, origins: withIndexedDb }
  if (localOnly.length === 0) return { storageState, apply: () => Promise.resolve() }
  return {
    storageState,
    apply: async (context) => {
      const remaining = new Map(localOnly.map((o) => [o.origin, (o.localStorage ?? []).map((e): [string, string] => [e.name, e.value])]))
      let script: Disposable | undefined
      let installing = Promise.resolve()
      const install = async () => {
        await script?.dispose().catch(() => undefined)
        script = remaining.size === 0 ? undefined : await context.addInitScript(writeLocalStorage, Object.fromEntries(remaining))
      }
      const watch = (page: Page) =>
        page.on("domcontentloaded", () => {
          let origin: string
          try {
            origin = new URL(page.url()).origin
          } catch {
            return
          }
          if (!remaining.delete(origin)) return
          installing = installing.then(install).catch(() => undefined)
        })
      context.pages().forEach(watch)
      context.on("page", watch)
      await install()
    }
  }
}
