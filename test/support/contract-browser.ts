/**
 * The contract hook for what a browser the test drives gets from the service: the console's own
 * API calls, its pages and assets, the take-control page. Every response of a watched Playwright
 * context from the service's origin goes through `checkExchange` (an event stream, a redirect or a
 * body the browser no longer holds: status, content type and headers only). A mismatch cannot throw
 * in the page, so it is kept; `takeMismatches` (after the checks under way end) hands it to the
 * test: `afterEach(async () => expect(await watch.takeMismatches()).toEqual([]))` fails the test
 * that caused it.
 */
import type { BrowserContext, Response } from "playwright-core"
import { checkExchange, contractHookMode } from "./contract-hook.ts"

export interface BrowserWatch {
  /** Checks every response of the context from the service (call once per context). */
  readonly watch: (context: BrowserContext) => void
  /** The mismatches since the last call, once the checks under way have ended; emptied. */
  readonly takeMismatches: () => Promise<Array<string>>
}

const bodyOf = async (response: Response, type: string): Promise<string | undefined> => {
  if (type.split(";")[0]!.trim().toLowerCase() === "text/event-stream") return undefined
  const status = response.status()
  if (status >= 300 && status < 400) return ""
  try {
    return (await response.body()).toString("utf8")
  } catch {
    // The page navigated away (or closed) before the body could be read: check the rest.
    return undefined
  }
}

export interface WatchOptions {
  /**
   * Paths on the service's origin whose responses the test itself makes (`page.route(…).fulfill`,
   * e.g. a page that loads a bundle from the service's origin): not the service's answers, not checked.
   */
  readonly fulfilledByTest?: (url: URL) => boolean
}

export const watchBrowser = (serviceUrl: string, options: WatchOptions = {}): BrowserWatch => {
  const origin = new URL(serviceUrl).origin
  const mismatches: Array<string> = []
  const pending = new Set<Promise<void>>()
  const onResponse = (response: Response) => {
    if (contractHookMode() === "off") return
    const url = new URL(response.url())
    if (url.origin !== origin || options.fulfilledByTest?.(url) === true) return
    const check = (async () => {
      // One entry per header line (allHeaders joins repeated Set-Cookie lines with a newline, which Headers refuses).
      const headers = new Headers()
      for (const { name, value } of await response.headersArray()) headers.append(name, value)
      const text = await bodyOf(response, headers.get("content-type") ?? "")
      await checkExchange(serviceUrl, { method: response.request().method(), pathname: url.pathname + url.search, status: response.status(), headers, text })
    })().catch((error: unknown) => {
      mismatches.push(error instanceof Error ? error.message : String(error))
    })
    pending.add(check)
    void check.finally(() => pending.delete(check))
  }
  return {
    watch: (context) => context.on("response", onResponse),
    takeMismatches: async () => {
      while (pending.size > 0) await Promise.all([...pending])
      return mismatches.splice(0)
    }
  }
}
