/**
 * Typed failures of the browser layer. The agent turns every one of them into a failed tool
 * call the model can read (`message` is written for the model), never into a crash.
 */
import { Schema } from "effect"

/** Chromium could not be started or reached (missing binary, bad CDP URL, launch timeout). */
export class BrowserUnavailable extends Schema.TaggedError<BrowserUnavailable>()("BrowserUnavailable", {
  message: Schema.String
}) {}

/** The browser process (or the page's renderer) died under this lease; lease a new context. */
export class BrowserCrashed extends Schema.TaggedError<BrowserCrashed>()("BrowserCrashed", {
  message: Schema.String
}) {}

/** The errors a lease itself can fail with. */
export type BrowserError = BrowserUnavailable | BrowserCrashed

/** A ref from an earlier observation no longer points at an element on the page. */
export class ElementNotFound extends Schema.TaggedError<ElementNotFound>()("ElementNotFound", {
  ref: Schema.String,
  message: Schema.String
}) {}

/** The navigation guard refused a private, loopback, link-local or metadata target. */
export class NavigationRefused extends Schema.TaggedError<NavigationRefused>()("NavigationRefused", {
  url: Schema.String,
  address: Schema.String,
  message: Schema.String
}) {}

/** A browser operation did not finish within its time limit. */
export class ActionTimeout extends Schema.TaggedError<ActionTimeout>()("ActionTimeout", {
  action: Schema.String,
  timeoutMs: Schema.Number,
  message: Schema.String
}) {}

/** The browser rejected the action (element not editable, not a select, bad key name, ...). */
export class ActionFailed extends Schema.TaggedError<ActionFailed>()("ActionFailed", {
  action: Schema.String,
  message: Schema.String
}) {}

/** Everything an agent action can fail with. */
export type ActionError = BrowserCrashed | ElementNotFound | NavigationRefused | ActionTimeout | ActionFailed
