/**
 * The live view of a session's page for the control page (take control): CDP
 * `Page.startScreencast` frames out, the person's mouse, wheel and keyboard in through
 * `Input.dispatchMouseEvent` / `Input.dispatchKeyEvent` / `Input.insertText`. Coordinates are CSS
 * pixels of the page's viewport; the control page maps its canvas onto them.
 */
import { Effect, Queue, Schedule, Schema, Stream } from "effect"
import type { CDPSession, Page } from "playwright-core"

/** One screencast frame: the JPEG (base64, as CDP gives it) and the viewport it shows, in CSS px. */
export const LiveFrame = Schema.Struct({
  data: Schema.String,
  width: Schema.Number,
  height: Schema.Number
})
export type LiveFrame = typeof LiveFrame.Type

const Coordinate = Schema.Number.check(Schema.isFinite(), Schema.isBetween({ minimum: -100_000, maximum: 100_000 }))

/** What the control page sends: one mouse, wheel, key or text input. */
export const LiveInput = Schema.Union([
  Schema.Struct({
    kind: Schema.Literal("mouse"),
    action: Schema.Literals(["down", "up", "move"]),
    x: Coordinate,
    y: Coordinate,
    button: Schema.optional(Schema.Literals(["left", "middle", "right", "none"])),
    buttons: Schema.optional(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 31 }))),
    click_count: Schema.optional(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 3 }))),
    modifiers: Schema.optional(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 15 })))
  }),
  Schema.Struct({
    kind: Schema.Literal("wheel"),
    x: Coordinate,
    y: Coordinate,
    delta_x: Coordinate,
    delta_y: Coordinate,
    modifiers: Schema.optional(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 15 })))
  }),
  Schema.Struct({
    kind: Schema.Literal("key"),
    action: Schema.Literals(["down", "up"]),
    key: Schema.String.check(Schema.isMaxLength(32)),
    code: Schema.optional(Schema.String.check(Schema.isMaxLength(32))),
    modifiers: Schema.optional(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 15 })))
  }),
  Schema.Struct({
    kind: Schema.Literal("text"),
    text: Schema.String.check(Schema.isMaxLength(10_000))
  })
])
export type LiveInput = typeof LiveInput.Type

/** Windows virtual key codes of the named keys (CDP needs them for keys without text). */
const keyCodes: Record<string, number> = {
  Backspace: 8, Tab: 9, Enter: 13, Shift: 16, Control: 17, Alt: 18, Escape: 27, " ": 32, PageUp: 33, PageDown: 34,
  End: 35, Home: 36, ArrowLeft: 37, ArrowUp: 38, ArrowRight: 39, ArrowDown: 40, Insert: 45, Delete: 46, Meta: 91
}

/** The text a key produces, or undefined for a key that types nothing (or a shortcut). */
const keyText = (key: string, modifiers: number) => {
  // Ctrl (2) or Meta (4) make a shortcut, not text.
  if ((modifiers & 6) !== 0) return undefined
  if (key === "Enter") return "\r"
  return [...key].length === 1 ? key : undefined
}

const virtualKeyCode = (key: string) => {
  const named = keyCodes[key]
  if (named !== undefined) return named
  if (/^[a-z]$/i.test(key)) return key.toUpperCase().charCodeAt(0)
  if (/^[0-9]$/.test(key)) return key.charCodeAt(0)
  return 0
}

/** Sends one input to the page through its CDP session. */
export const dispatchInput = (cdp: CDPSession, input: LiveInput): Promise<unknown> => {
  switch (input.kind) {
    case "mouse":
      return cdp.send("Input.dispatchMouseEvent", {
        type: input.action === "down" ? "mousePressed" : input.action === "up" ? "mouseReleased" : "mouseMoved",
        x: input.x,
        y: input.y,
        button: input.button ?? (input.action === "move" ? "none" : "left"),
        buttons: input.buttons ?? 0,
        clickCount: input.click_count ?? (input.action === "move" ? 0 : 1),
        modifiers: input.modifiers ?? 0
      })
    case "wheel":
      return cdp.send("Input.dispatchMouseEvent", {
        type: "mouseWheel",
        x: input.x,
        y: input.y,
        deltaX: input.delta_x,
        deltaY: input.delta_y,
        modifiers: input.modifiers ?? 0
      })
    case "key": {
      const modifiers = input.modifiers ?? 0
      const text = input.action === "down" ? keyText(input.key, modifiers) : undefined
      return cdp.send("Input.dispatchKeyEvent", {
        type: input.action === "up" ? "keyUp" : text === undefined ? "rawKeyDown" : "keyDown",
        key: input.key,
        code: input.code ?? "",
        windowsVirtualKeyCode: virtualKeyCode(input.key),
        modifiers,
        ...(text === undefined ? {} : { text, unmodifiedText: text })
      })
    }
    case "text":
      return cdp.send("Input.insertText", { text: input.text })
  }
}

/** How long the view waits for the screencast's first frame before a screenshot stands in for it. */
const FIRST_FRAME_WAIT = "400 millis"
/** Tries to start the screencast (each on a fresh CDP session), this far apart. */
const START_TRIES = 15
const START_RETRY_SPACING = "200 millis"

export interface ScreencastOptions {
  readonly quality: number
  readonly maxWidth: number
  readonly maxHeight: number
}

/**
 * The page's screencast as a stream: each frame is acknowledged as soon as it arrives (so Chromium
 * keeps sending at its own pace) and only the newest two are kept when the consumer is slower, so
 * the view shows the page as it is now rather than a backlog. The screencast stops and its CDP
 * session is detached when the stream ends.
 */
export const screencast = (page: Page, options: ScreencastOptions): Stream.Stream<LiveFrame, unknown> =>
  Stream.unwrap(Effect.gen(function*() {
    const queue = yield* Queue.sliding<LiveFrame>(2)
    let framed = false
    // A session on a page in the middle of a cross-process navigation (a redirect at the moment a
    // person opens the view) is refused ("Not attached to an active page"): the session and the
    // start are tried again, a fresh session each time, for up to about three seconds.
    const cdp = yield* Effect.acquireRelease(
      Effect.tryPromise(async () => {
        const session = await page.context().newCDPSession(page)
        session.on("Page.screencastFrame", (frame) => {
          framed = true
          session.send("Page.screencastFrameAck", { sessionId: frame.sessionId }).catch(() => undefined)
          Queue.offerUnsafe(queue, { data: frame.data, width: frame.metadata.deviceWidth, height: frame.metadata.deviceHeight })
        })
        try {
          await session.send("Page.startScreencast", {
            format: "jpeg",
            quality: options.quality,
            maxWidth: options.maxWidth,
            maxHeight: options.maxHeight,
            everyNthFrame: 1
          })
          return session
        } catch (error) {
          await session.detach().catch(() => undefined)
          throw error
        }
      }).pipe(Effect.retry({ times: START_TRIES - 1, schedule: Schedule.spaced(START_RETRY_SPACING), while: () => !page.isClosed() })),
      (session) =>
        Effect.promise(async () => {
          await session.send("Page.stopScreencast").catch(() => undefined)
          await session.detach().catch(() => undefined)
        })
    )
    // Chromium sends a screencast frame when the page paints. A page that is idle when the view
    // opens (a login form waiting for a person, on a busy machine) may not paint for a long time,
    // so when no frame has come soon, one screenshot stands in as the first frame.
    yield* Effect.forkScoped(Effect.gen(function*() {
      yield* Effect.sleep(FIRST_FRAME_WAIT)
      if (framed) return
      const viewport = page.viewportSize()
      const shot = yield* Effect.tryPromise(() => cdp.send("Page.captureScreenshot", { format: "jpeg", quality: options.quality }))
      if (!framed && viewport !== null) Queue.offerUnsafe(queue, { data: shot.data, width: viewport.width, height: viewport.height })
    }).pipe(Effect.ignore))
    return Stream.fromQueue(queue)
  }))
