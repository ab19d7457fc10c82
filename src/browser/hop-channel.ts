/**
 * A browser's CDP channel for the navigation guards of its contexts (guard.ts): every page of a
 * watched context, and every cross-site frame running in its own process (OOPIF), gets its
 * document responses intercepted (Fetch, response stage, documents only) from its very first
 * request, so that a redirect hop the guard refuses is failed before the browser asks its host.
 *
 * Why a channel of its own, and how:
 * - A per-page session (`context.newCDPSession(page)`) comes too late for a pop-up: Playwright
 *   lets the new target run (Runtime.runIfWaitingForDebugger) before it emits the page, and the
 *   pop-up's first load, redirect hops included, may already be under way. Frames in their own
 *   process are other targets, which a page's session does not intercept.
 * - Auto-attaching with `waitForDebuggerOnStart` holds a new target until every client that
 *   attached that way lets it run; Chromium then defers its navigations. Playwright does this
 *   itself (crBrowser.ts, crPage.ts: browser-level and per-page Target.setAutoAttach, flatten).
 *   Here a second client does the same: it enables Fetch in the new target before letting it
 *   run, so no request of a pop-up or OOPIF leaves unwatched. Playwright resumes for itself;
 *   each client's hold is independent.
 * - Browser-level auto-attach (the only one that sees pop-ups) only exists in flat mode, and
 *   Playwright's CDPSession cannot address flat child sessions (its connection drops messages of
 *   session ids it did not create). So the channel is a NON-flat session to the browser target
 *   (`Target.attachToTarget {flatten: false}` from a browser CDP session): its messages travel
 *   as strings (Target.sendMessageToTarget / receivedMessageFromTarget), and inside that string
 *   channel the flat children of the browser target are addressed by their `sessionId`.
 * - Auto-attach is on while at least one context is watched. It reports the pages of every
 *   context of the browser (filter: pages); those of contexts not watched are let go at once
 *   (one round trip at their creation). A page of a watched context gets Fetch and, for its
 *   cross-site frames, auto-attach (filter: iframes) in turn, before it is let go.
 * - Any failure while setting a target up still lets it run (a target is never left held).
 * - Main frames are decided by the browser target's own Fetch interception (documents, response
 *   stage), on while a context is watched: the hold above is not a hold for every client. When
 *   Playwright lets a pop-up run first, Chromium starts its first load at once, and a Fetch
 *   enabled in the pop-up a moment later does not see that load nor its redirect hops (seen on a
 *   busy host: the refused host was asked). The browser target's interception is in place before
 *   any pop-up exists. Its pauses carry the frame id, which for a main frame is its page's target
 *   id; that tells the context (pages are reported by auto-attach before they run). The targets'
 *   own interception then decides only subframes (a page's same-process frames, and OOPIFs).
 */
import type { Browser, CDPSession } from "playwright-core"

/** A document response paused at the response stage (Fetch.requestPaused). */
export interface PausedDocument {
  readonly requestId: string
  readonly frameId: string
  readonly request: { readonly url: string }
  readonly responseStatusCode?: number
  readonly responseHeaders?: ReadonlyArray<{ readonly name: string; readonly value: string }>
}

/** Decides a paused document response: true fails it (BlockedByClient), false lets it go on. */
export type HopDecision = (paused: PausedDocument, mainFrame: boolean) => Promise<boolean>

export interface HopChannel {
  /**
   * Watches every page of the browser context (those open now, and new ones from their first
   * request) and their cross-site frames. Resolves once the open pages are watched; the
   * returned function stops watching.
   */
  readonly watchContext: (browserContextId: string, decide: HopDecision) => Promise<() => void>
}

interface TargetInfo {
  readonly targetId: string
  readonly type: string
  readonly browserContextId?: string
}

interface Attached {
  readonly contextId: string
  readonly targetId: string
  /** The page's main frame (its frame id is the page's target id); undefined for a frame target. */
  readonly mainFrameId: string | undefined
}

const documentResponses = { patterns: [{ urlPattern: "*", resourceType: "Document", requestStage: "Response" }] }

const open = async (browser: Browser): Promise<HopChannel> => {
  const root: CDPSession = await browser.newBrowserCDPSession()
  const browserTarget = (await root.send("Target.getTargetInfo")).targetInfo.targetId
  const channel = (await root.send("Target.attachToTarget", { targetId: browserTarget, flatten: false })).sessionId

  let closed = false
  let nextId = 0
  const pending = new Map<number, { resolve: (result: unknown) => void; reject: (error: Error) => void }>()
  /** Sends a command to the browser target (no session) or to one of its flat children. */
  const send = <A = unknown>(sessionId: string | undefined, method: string, params: object = {}): Promise<A> => {
    if (closed) return Promise.reject(new Error("the hop channel is closed"))
    const id = ++nextId
    const message = JSON.stringify(sessionId === undefined ? { id, method, params } : { id, method, params, sessionId })
    return new Promise<A>((resolve, reject) => {
      pending.set(id, { resolve: resolve as (result: unknown) => void, reject })
      root.send("Target.sendMessageToTarget", { sessionId: channel, message }).catch((error: unknown) => {
        pending.delete(id)
        reject(error instanceof Error ? error : new Error(String(error)))
      })
    })
  }
  const quietly = (sessionId: string | undefined, method: string, params: object = {}) =>
    send(sessionId, method, params).then(() => undefined, () => undefined)

  const contexts = new Map<string, HopDecision>()
  const sessions = new Map<string, Attached>()
  /** Target id → its session, so a target attached twice (auto-attach and explicit) is watched once. */
  const targets = new Map<string, string>()
  /** Set-ups under way (a context's `watchContext` waits for its open pages'). */
  const settingUp = new Set<Promise<void>>()

  const letGo = async (parent: string | undefined, sessionId: string, waiting: boolean) => {
    if (waiting) await quietly(sessionId, "Runtime.runIfWaitingForDebugger")
    await quietly(parent, "Target.detachFromTarget", { sessionId })
  }

  const onAttached = (parent: string | undefined, event: { sessionId: string; targetInfo: TargetInfo; waitingForDebugger: boolean }) => {
    const { sessionId, targetInfo, waitingForDebugger } = event
    const contextId = (parent === undefined ? undefined : sessions.get(parent)?.contextId) ?? targetInfo.browserContextId
    const watched = contextId !== undefined && contexts.has(contextId)
    if (!watched || targets.has(targetInfo.targetId) || (targetInfo.type !== "page" && targetInfo.type !== "iframe")) {
      void letGo(parent, sessionId, waitingForDebugger)
      return
    }
    targets.set(targetInfo.targetId, sessionId)
    sessions.set(sessionId, { contextId, targetId: targetInfo.targetId, mainFrameId: targetInfo.type === "page" ? targetInfo.targetId : undefined })
    const setUp = Promise.all([
      send(sessionId, "Fetch.enable", documentResponses),
      // Its cross-site frames, each in a process of its own, are targets of their own.
      send(sessionId, "Target.setAutoAttach", { autoAttach: true, waitForDebuggerOnStart: true, flatten: true, filter: [{ type: "iframe" }] })
    ]).then(() => undefined, () => undefined).then(async () => {
      // Only now may it run: its first request meets the interception.
      if (waitingForDebugger) await quietly(sessionId, "Runtime.runIfWaitingForDebugger")
    })
    settingUp.add(setUp)
    void setUp.finally(() => settingUp.delete(setUp))
  }

  const onDetached = (event: { sessionId: string }) => {
    const attached = sessions.get(event.sessionId)
    if (attached === undefined) return
    sessions.delete(event.sessionId)
    if (targets.get(attached.targetId) === event.sessionId) targets.delete(attached.targetId)
  }

  /** Whether the browser target's interception decides main frames (see above). */
  let mainFramesAtBrowser = false
  const answer = (sessionId: string | undefined, fail: boolean, paused: PausedDocument) =>
    quietly(sessionId, fail ? "Fetch.failRequest" : "Fetch.continueRequest", fail
      ? { requestId: paused.requestId, errorReason: "BlockedByClient" }
      : { requestId: paused.requestId })

  /** A target's own pause: a subframe's document, or a main frame's when the browser does not decide them. */
  const onPaused = async (sessionId: string, paused: PausedDocument) => {
    const attached = sessions.get(sessionId)
    const main = paused.frameId === attached?.mainFrameId
    const decide = attached === undefined || (main && mainFramesAtBrowser) ? undefined : contexts.get(attached.contextId)
    const fail = decide === undefined ? false : await decide(paused, main).catch(() => false)
    await answer(sessionId, fail, paused)
  }

  /** The browser target's pause: every document of the browser; only watched main frames are decided. */
  const onBrowserPaused = async (paused: PausedDocument) => {
    const sessionId = targets.get(paused.frameId)
    const attached = sessionId === undefined ? undefined : sessions.get(sessionId)
    const decide = attached?.mainFrameId === paused.frameId ? contexts.get(attached.contextId) : undefined
    const fail = decide === undefined ? false : await decide(paused, true).catch(() => false)
    await answer(undefined, fail, paused)
  }

  root.on("Target.receivedMessageFromTarget", (event) => {
    if (event.sessionId !== channel) return
    let message: { id?: number; method?: string; params?: unknown; result?: unknown; error?: { message?: string }; sessionId?: string }
    try {
      message = JSON.parse(event.message) as typeof message
    } catch {
      return
    }
    if (message.id !== undefined) {
      const waiter = pending.get(message.id)
      pending.delete(message.id)
      if (message.error !== undefined) waiter?.reject(new Error(message.error.message ?? "CDP error"))
      else waiter?.resolve(message.result)
      return
    }
    switch (message.method) {
      case "Target.attachedToTarget":
        return onAttached(message.sessionId, message.params as Parameters<typeof onAttached>[1])
      case "Target.detachedFromTarget":
        return onDetached(message.params as { sessionId: string })
      case "Fetch.requestPaused":
        if (message.sessionId !== undefined) void onPaused(message.sessionId, message.params as PausedDocument)
        else void onBrowserPaused(message.params as PausedDocument)
        return
    }
  })
  const close = () => {
    if (closed) return
    closed = true
    channels.delete(browser)
    for (const waiter of pending.values()) waiter.reject(new Error("the hop channel closed"))
    pending.clear()
  }
  root.on("Target.detachedFromTarget", (event) => {
    if (event.sessionId === channel) close()
  })
  ;(root as unknown as { on(event: "close", f: () => void): void }).on("close", close)

  /** Auto-attach on while a context is watched; toggles run one after another. */
  let attaching = false
  let toggles: Promise<void> = Promise.resolve()
  const toggle = () => {
    toggles = toggles.then(async () => {
      const want = contexts.size > 0
      if (want === attaching) return
      attaching = want
      if (want) {
        // Before auto-attach: a page reported by it is already covered.
        mainFramesAtBrowser = await send(undefined, "Fetch.enable", documentResponses).then(() => true, () => false)
      } else {
        mainFramesAtBrowser = false
        await quietly(undefined, "Fetch.disable")
      }
      await send(undefined, "Target.setAutoAttach", want
        ? { autoAttach: true, waitForDebuggerOnStart: true, flatten: true, filter: [{ type: "page" }] }
        : { autoAttach: false, waitForDebuggerOnStart: false, flatten: true }).catch(() => undefined)
    })
    return toggles
  }

  return {
    watchContext: async (browserContextId, decide) => {
      const stop = () => {
        if (contexts.get(browserContextId) !== decide) return
        contexts.delete(browserContextId)
        for (const [sessionId, attached] of sessions) {
          if (attached.contextId === browserContextId && attached.mainFrameId !== undefined) void quietly(undefined, "Target.detachFromTarget", { sessionId })
        }
        void toggle()
      }
      contexts.set(browserContextId, decide)
      try {
        await toggle()
        // Pages open before auto-attach was on for this context (it was on for another one).
        const { targetInfos } = await send<{ targetInfos: ReadonlyArray<TargetInfo> }>(undefined, "Target.getTargets", { filter: [{ type: "page" }] })
        await Promise.all(targetInfos
          .filter((t) => t.browserContextId === browserContextId && !targets.has(t.targetId))
          .map((t) => send(undefined, "Target.attachToTarget", { targetId: t.targetId, flatten: true }).catch(() => undefined)))
        while (settingUp.size > 0) await Promise.all([...settingUp])
      } catch (error) {
        stop()
        throw error
      }
      return stop
    }
  }
}

const channels = new WeakMap<Browser, Promise<HopChannel>>()

/** The browser's channel, opened on first use and shared by its contexts' guards. */
export const hopChannelOf = (browser: Browser): Promise<HopChannel> => {
  const known = channels.get(browser)
  if (known !== undefined) return known
  const opening = open(browser)
  channels.set(browser, opening)
  opening.catch(() => channels.delete(browser))
  return opening
}
