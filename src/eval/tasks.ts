/**
 * The tasks of the evaluation suite (`wa eval`): each names its start page on the fixture sites
 * (src/eval/sites.ts), what a person would ask, and a fixed plan. The plan is what the scripted
 * model (src/eval/scripted-model.ts) follows in CI: a deterministic function of the observation
 * the service sends (refs found by role and name in the snapshot text) and of the tool results so
 * far, so that what the suite measures there is the observation and the tools, not a model. A
 * real model gets only the instructions.
 *
 * A task passes when its run ends `done` and the run's output carries the code the site revealed
 * (and, for the download, the file is in the workspace): the site decides, not the agent.
 */
import type { EvalSite } from "./sites.ts"
import { findColour, imageScale, magenta } from "./vision.ts"

/** A tool call the scripted model answers with. */
export interface PlanStep {
  readonly tool: string
  readonly args?: Record<string, unknown>
}

export interface PlanContext {
  /** The newest observation: URL, title, tabs and the page snapshot. */
  readonly page: string
  /**
   * The screenshots (JPEG) that came with the newest observation: one when the service runs with
   * vision (WA_MODEL_VISION), none otherwise. The page text then ends with the image note (its
   * size, and the scale to divide image coordinates by for click_at).
   */
  readonly images: ReadonlyArray<Uint8Array>
  /** The JSON results of the run's tool calls so far, oldest first. */
  readonly results: ReadonlyArray<any>
  /** The error of the last tool call, if it failed. */
  readonly lastError: string | undefined
  /** The start page of the task. */
  readonly start: string
}

export interface EvalTask {
  readonly name: string
  /** The widget class or flow it measures (the list). */
  readonly category: string
  /** Start page, a path on the fixture site. */
  readonly path: string
  /** What the person asks, after "Start page: URL". */
  readonly goal: string
  /** The session gets a workspace: with these files (the site's upload content), expecting this file afterwards. */
  readonly workspace?: { readonly files?: ReadonlyArray<string>; readonly expectFile?: string }
  /** How the person running the eval answers the run's ask_human. */
  readonly answer?: (site: EvalSite, prompt: string) => string
  readonly plan: (ctx: PlanContext) => PlanStep
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/** The ref printed right after `text` (several controls can share a line), e.g. refOf(page, 'radio "Pro'). */
export const refOf = (page: string, text: string): string | undefined =>
  new RegExp(`${escapeRegExp(text)}[^[\\n]*\\[((?:f\\d+)*e\\d+)\\]`).exec(page)?.[1]

/** The states printed after the element's ref (checked, collapsed, ="value", ...), up to the next element. */
export const statesOf = (page: string, text: string): string =>
  new RegExp(`${escapeRegExp(text)}[^[\\n]*\\[(?:f\\d+)*e\\d+\\]([^\\n]*)`).exec(page)?.[1]?.split(/ (?=[a-z]+ "|\[)/)[0] ?? ""

const need = (page: string, text: string): string => {
  const ref = refOf(page, text)
  if (ref === undefined) throw new PlanStuck(`no ${text} in the snapshot`)
  return ref
}

/** A plan that finds nothing to act on: the scripted model ends the run with the reason. */
export class PlanStuck extends Error {}

const click = (page: string, text: string): PlanStep => ({ tool: "click", args: { ref: need(page, text) } })
const type = (page: string, text: string, value: string, submit = false): PlanStep => ({
  tool: "type",
  args: { ref: need(page, text), text: value, ...(submit ? { submit: true } : {}) }
})
const has = (page: string, text: string) => page.includes(text)
const checked = (page: string, text: string) => /\bchecked\b/.test(statesOf(page, text))
const valueOf = (page: string, text: string) => /="([^"]*)"/.exec(statesOf(page, text))?.[1] ?? ""
const line = (page: string, prefix: string) => page.split("\n").map((l) => l.trim()).find((l) => l.startsWith(prefix)) ?? ""

export const evalTasks: ReadonlyArray<EvalTask> = [
  // ---- labels that stand for hidden inputs
  {
    name: "hidden-radio-tiles",
    category: "hidden-input",
    path: "/t/hidden-radio-tiles",
    goal: "Choose the Pro plan (keep monthly billing).",
    plan: ({ page }) => click(page, 'radio "Pro')
  },
  {
    name: "btn-check",
    category: "hidden-input",
    path: "/t/btn-check",
    goal: "Add olives to the pizza (keep the basil, no cheese) and pick the large size.",
    plan: ({ page }) => !line(page, "Toppings:").includes("olives") ? click(page, 'checkbox "Olives"') : click(page, 'radio "Large"')
  },
  {
    name: "star-rating",
    category: "hidden-input",
    path: "/t/star-rating",
    goal: "Rate your stay 4 stars.",
    plan: ({ page }) => click(page, 'radio "4 stars"')
  },
  {
    name: "terms-checkbox",
    category: "hidden-input",
    path: "/t/terms-checkbox",
    goal: "Accept the terms of service and continue.",
    plan: ({ page }) => !checked(page, 'checkbox "I agree') ? click(page, 'checkbox "I agree') : click(page, 'button "Continue"')
  },
  // ---- icon-only controls
  {
    name: "icon-title",
    category: "icon-only",
    path: "/t/icon-title",
    goal: "Add the article to your favourites (do not delete it).",
    plan: ({ page }) => click(page, '"Add to favourites"')
  },
  {
    name: "icon-aria",
    category: "icon-only",
    path: "/t/icon-aria",
    goal: "Archive the quarterly report message (do not mark it as spam).",
    plan: ({ page }) => click(page, '"Archive message"')
  },
  {
    name: "stepper",
    category: "icon-only",
    path: "/t/stepper",
    goal: "Put exactly 3 green teas into the cart: set the quantity to 3 with its buttons, then add to cart.",
    plan: ({ page }) => {
      const quantity = Number(/Decrease quantity"[^\n]*?\[(?:f\d+)*e\d+\]\s*(\d+)/.exec(page)?.[1] ?? NaN)
      if (Number.isNaN(quantity)) throw new PlanStuck("no quantity next to the Decrease button")
      return quantity < 3 ? click(page, '"Increase quantity"') : quantity > 3 ? click(page, '"Decrease quantity"') : click(page, 'button "Add to cart"')
    }
  },
  // ---- drag and drop, sliders
  {
    name: "sortable",
    category: "drag-and-drop",
    path: "/t/sortable",
    goal: "Reorder the release steps so that Deploy comes first.",
    plan: ({ page }) => ({ tool: "drag", args: { ref: need(page, 'draggable "Deploy"'), to_ref: need(page, 'draggable "Write changelog"') } })
  },
  {
    name: "kanban",
    category: "drag-and-drop",
    path: "/t/kanban",
    goal: "Move the card \"Fix login bug\" to the Done column.",
    plan: ({ page }) => ({ tool: "drag", args: { ref: need(page, 'draggable "Fix login bug"'), to_ref: need(page, 'dropzone "Done"') } })
  },
  {
    name: "div-slider",
    category: "slider",
    path: "/t/div-slider",
    goal: "Set the volume to 80.",
    plan: ({ page }) => {
      const at = /track=(\d+(?:\.\d+)?)px at=(\d+(?:\.\d+)?)px/.exec(page)
      if (at === null) throw new PlanStuck("no slider handle with track/at in the snapshot")
      return { tool: "drag", args: { ref: need(page, "draggable"), dx: Math.round(Number(at[1]) * 0.8 - Number(at[2])), dy: 0 } }
    }
  },
  {
    name: "range-slider",
    category: "slider",
    path: "/t/range-slider",
    goal: "Set the brightness slider to 7.",
    plan: ({ page }) => {
      const value = Number(valueOf(page, 'slider "Brightness"') || line(page, "Brightness:").replace(/\D+/g, ""))
      if (value === 2) return click(page, 'slider "Brightness"')
      return { tool: "press_key", args: { key: value < 7 ? "ArrowRight" : "ArrowLeft" } }
    }
  },
  // ---- selects, menus, pickers
  {
    name: "native-select",
    category: "select",
    path: "/t/native-select",
    goal: "Set the shipping country to Canada.",
    plan: ({ page }) => ({ tool: "select_option", args: { ref: need(page, 'combobox "Country"'), values: ["Canada"] } })
  },
  {
    name: "aria-select",
    category: "select",
    path: "/t/aria-select",
    goal: "Choose Express as the delivery speed.",
    plan: ({ page }) => has(page, 'option "Express"') ? click(page, 'option "Express"') : click(page, 'button "Delivery speed')
  },
  {
    name: "div-menu",
    category: "menu",
    path: "/t/div-menu",
    goal: "Duplicate the file budget.xlsx using its Actions menu.",
    plan: ({ page }) => has(page, '"Duplicate"') ? click(page, '"Duplicate"') : click(page, '"Actions')
  },
  {
    name: "hover-menu",
    category: "menu",
    path: "/t/hover-menu",
    goal: "Open the Phones category from the Products menu.",
    plan: ({ page }) => has(page, 'link "Phones"') ? click(page, 'link "Phones"') : { tool: "hover", args: { ref: need(page, '"Products"') } }
  },
  {
    name: "autocomplete",
    category: "autocomplete",
    path: "/t/autocomplete",
    goal: "Set the destination to Bergen, picking it from the suggestions.",
    plan: ({ page }) => has(page, 'option "Bergen"') ? click(page, 'option "Bergen"') : type(page, 'textbox "Destination"', "Ber")
  },
  {
    name: "datepicker",
    category: "date-picker",
    path: "/t/datepicker",
    goal: "Pick 14 April 2026 as the check-in date in the calendar.",
    plan: ({ page }) => {
      if (has(page, '"April 14, 2026"')) return click(page, '"April 14, 2026"')
      if (has(page, '"Next month"')) return click(page, '"Next month"')
      return click(page, 'textbox "Check-in"')
    }
  },
  {
    name: "date-input",
    category: "date-picker",
    path: "/t/date-input",
    goal: "Set the appointment date to 1 May 2026.",
    plan: ({ page }) => type(page, '"Appointment date"', "2026-05-01")
  },
  // ---- text editing
  {
    name: "contenteditable",
    category: "contenteditable",
    path: "/t/contenteditable",
    goal: "Write a note that says exactly \"Buy oat milk\" and save it.",
    // The editor's text is not a value the snapshot prints: type once, then save.
    plan: ({ page, results }) => results.length <= 1 ? type(page, 'textbox "Note body"', "Buy oat milk") : click(page, 'button "Save note"')
  },
  // ---- shadow DOM and iframes
  {
    name: "shadow-open",
    category: "shadow-dom",
    path: "/t/shadow-open",
    goal: "Apply the coupon SAVE10.",
    plan: ({ page }) => valueOf(page, 'textbox "Coupon"') !== "SAVE10" ? type(page, 'textbox "Coupon"', "SAVE10") : click(page, 'button "Apply coupon"')
  },
  {
    name: "shadow-nested",
    category: "shadow-dom",
    path: "/t/shadow-nested",
    goal: "Confirm the order.",
    plan: ({ page }) => click(page, 'button "Confirm order"')
  },
  {
    name: "iframe-same",
    category: "iframe",
    path: "/t/iframe-same",
    goal: "Subscribe eval@example.com to the newsletter.",
    plan: ({ page }) => valueOf(page, 'textbox "Email"') !== "eval@example.com" ? type(page, 'textbox "Email"', "eval@example.com") : click(page, 'button "Subscribe"')
  },
  {
    name: "iframe-cross",
    category: "iframe",
    path: "/t/iframe-cross",
    goal: "Pay, with the card saved for later.",
    plan: ({ page }) => !checked(page, 'checkbox "Save this card"') ? click(page, 'checkbox "Save this card"') : click(page, 'button "Pay now"')
  },
  // ---- overlays, disclosure, tabs, switches, dialogs
  {
    name: "modal",
    category: "modal",
    path: "/t/modal",
    goal: "Change the display name to Ada.",
    plan: ({ page }) => {
      if (!has(page, 'textbox "Display name"')) return click(page, 'button "Edit profile"')
      if (valueOf(page, 'textbox "Display name"') !== "Ada") return type(page, 'textbox "Display name"', "Ada")
      return click(page, 'button "Save changes"')
    }
  },
  {
    name: "cookie-wall",
    category: "cookie-wall",
    path: "/t/cookie-wall",
    goal: "Put the blue mug into the cart.",
    plan: ({ page, lastError }) => {
      // The failed click names the cookie wall and the ref of its "Accept all".
      const accept = lastError?.match(/"Accept all" \[(e\d+)\]/)?.[1]
      return accept !== undefined ? { tool: "click", args: { ref: accept } } : click(page, 'button "Buy now"')
    }
  },
  {
    name: "accordion",
    category: "disclosure",
    path: "/t/accordion",
    goal: "Track my parcel (the button is in the Shipping section).",
    plan: ({ page }) => /collapsed/.test(statesOf(page, 'button "Shipping"')) ? click(page, 'button "Shipping"') : click(page, 'button "Track my parcel"')
  },
  {
    name: "tabs",
    category: "tabs",
    path: "/t/tabs",
    goal: "Enable invoices in the Billing settings.",
    plan: ({ page }) => has(page, 'button "Enable invoices"') ? click(page, 'button "Enable invoices"') : click(page, 'tab "Billing"')
  },
  {
    name: "switch",
    category: "switch",
    path: "/t/switch",
    goal: "Turn dark mode on (leave email alerts on).",
    plan: ({ page }) => click(page, 'switch "Dark mode"')
  },
  {
    name: "confirm-dialog",
    category: "dialog",
    path: "/t/confirm-dialog",
    goal: "Delete the old draft.",
    plan: ({ page }) => click(page, 'button "Delete draft"')
  },
  {
    name: "delayed-content",
    category: "async-content",
    path: "/t/delayed-content",
    goal: "Load the report and acknowledge it.",
    plan: ({ page }) => {
      if (has(page, 'button "Acknowledge report"')) return click(page, 'button "Acknowledge report"')
      if (has(page, "Loading")) return { tool: "wait_for", args: { text: "Acknowledge report", timeout_ms: 10_000 } }
      return click(page, 'button "Load report"')
    }
  },
  // ---- lists, scrolling, tabs and windows
  {
    name: "infinite-scroll",
    category: "infinite-scroll",
    path: "/t/infinite-scroll",
    goal: "Like post 34 in the feed (it loads as you scroll).",
    plan: ({ page }) => has(page, 'button "Like post 34"') ? click(page, 'button "Like post 34"') : { tool: "scroll", args: { direction: "down", amount: 2000 } }
  },
  {
    name: "new-tab",
    category: "new-tab",
    path: "/t/new-tab",
    goal: "Open invoice 7 (it opens in a new tab) and mark it as paid.",
    plan: ({ page }) => tabStep(page, "Invoice 7", 'button "Mark as paid"', 'link "Open invoice 7')
  },
  {
    name: "popup",
    category: "new-tab",
    path: "/t/popup",
    goal: "Open the support chat window and start a conversation.",
    plan: ({ page }) => tabStep(page, "Chat", 'button "Start conversation"', 'button "Open chat window"')
  },
  {
    name: "file-input",
    category: "file-input",
    path: "/t/file-input",
    goal: "Upload the file invoice.txt from your workspace through the form.",
    workspace: { files: ["invoice.txt"] },
    // The file input's value (C:\\fakepath\\invoice.txt) says the file is set.
    plan: ({ page }) =>
      valueOf(page, 'file "Invoice file"').endsWith("invoice.txt")
        ? click(page, 'button "Upload invoice"')
        : { tool: "upload_file", args: { ref: need(page, 'file "Invoice file"'), name: "invoice.txt" } }
  },
  // ---- tables
  {
    name: "table-action",
    category: "table",
    path: "/t/table-action",
    goal: "Approve order #1042 (only that one).",
    plan: ({ page }) => {
      const row = page.split("\n").find((l) => l.includes("#1042"))
      const ref = row === undefined ? undefined : refOf(row, 'button "Approve"')
      if (ref === undefined) throw new PlanStuck("no Approve button on the row of #1042")
      return { tool: "click", args: { ref } }
    }
  },
  {
    name: "table-extract",
    category: "table",
    path: "/t/table-extract",
    goal: "Find how many Blue mugs are in stock, enter that number as the answer and check it.",
    plan: ({ page }) => {
      const stock = /Blue mug\D+(\d+)/.exec(page)?.[1]
      if (stock === undefined) throw new PlanStuck("no Blue mug row")
      return valueOf(page, 'textbox "Units of Blue mug"') !== stock ? type(page, 'textbox "Units of Blue mug"', stock) : click(page, 'button "Check answer"')
    }
  },
  // ---- forms and flows
  {
    name: "contact-form",
    category: "form",
    path: "/t/contact-form",
    goal: "Send the contact form as Grace Hopper (grace@example.com), topic Billing, marked urgent, with the message \"Please resend my invoice\".",
    plan: ({ page }) => {
      if (valueOf(page, 'textbox "Name"') !== "Grace Hopper") return type(page, 'textbox "Name"', "Grace Hopper")
      if (valueOf(page, 'textbox "Email"') !== "grace@example.com") return type(page, 'textbox "Email"', "grace@example.com")
      if (!checked(page, 'radio "Billing"')) return click(page, 'radio "Billing"')
      if (!checked(page, 'checkbox "Urgent"')) return click(page, 'checkbox "Urgent"')
      if (valueOf(page, 'textbox "Message"') !== "Please resend my invoice") return type(page, 'textbox "Message"', "Please resend my invoice")
      return click(page, 'button "Send message"')
    }
  },
  {
    name: "wizard",
    category: "multi-page-form",
    path: "/t/wizard",
    goal: "Place the order in three steps for Ana Silva, postcode 4000-123 in Porto, confirming the details.",
    plan: ({ page }) => {
      if (has(page, "Step 1 of 3")) return type(page, 'textbox "Full name"', "Ana Silva", true)
      if (has(page, "Step 2 of 3")) {
        if (valueOf(page, 'combobox "City"') !== "Porto") return { tool: "select_option", args: { ref: need(page, 'combobox "City"'), values: ["Porto"] } }
        if (valueOf(page, 'textbox "Postcode"') !== "4000-123") return type(page, 'textbox "Postcode"', "4000-123")
        return click(page, 'button "Next"')
      }
      if (!checked(page, 'checkbox "The details are correct"')) return click(page, 'checkbox "The details are correct"')
      return click(page, 'button "Place order"')
    }
  },
  {
    name: "search-extract",
    category: "search-extract",
    path: "/t/search-extract",
    goal: "Search the catalogue for \"widget pro\", open the Acme Widget Pro and report its reference number.",
    plan: ({ page }) => {
      const reference = /Reference number: (\S+)/.exec(page)?.[1]
      if (reference !== undefined) return { tool: "done", args: { output: `Reference number: ${reference}` } }
      if (has(page, 'link "Acme Widget Pro"')) return click(page, 'link "Acme Widget Pro"')
      return type(page, '"Search products"', "widget pro", true)
    }
  },
  {
    name: "login-2fa",
    category: "login-2fa",
    path: "/t/login-2fa",
    goal: "Sign in as eval with the password correct-horse. The site asks for a one-time code sent to my phone: ask me for it (ask_human).",
    answer: (site) => site.oneTimeCode,
    plan: ({ page, results }) => {
      if (has(page, "Two-step verification")) {
        const answer = [...results].reverse().find((r) => r?.answer !== undefined)?.answer
        if (answer === undefined) return { tool: "ask_human", args: { prompt: "What is the one-time code the site sent to your phone?", schema: { type: "string" } } }
        return type(page, 'textbox "One-time code"', String(answer), true)
      }
      if (valueOf(page, 'textbox "Username"') !== "eval") return type(page, 'textbox "Username"', "eval")
      if (valueOf(page, 'textbox "Password"') === "") return type(page, 'textbox "Password"', "correct-horse", true)
      return click(page, 'button "Sign in"')
    }
  },
  {
    name: "download",
    category: "download",
    path: "/t/download",
    goal: "Download the March statement into your workspace, read the file and report the success code written in it.",
    workspace: { expectFile: "statement.csv" },
    plan: ({ page, results }) => {
      const text = [...results].reverse().find((r) => typeof r?.text === "string")?.text as string | undefined
      const code = text === undefined ? undefined : /success_code,([^,\s]+)/.exec(text)?.[1]
      if (code !== undefined) return { tool: "done", args: { output: `Success code: ${code}` } }
      if (results.some((r) => Array.isArray(r?.files) && r.files.some((f: any) => f?.name === "statement.csv"))) return { tool: "read_file", args: { name: "statement.csv" } }
      if (results.length >= 2) return { tool: "list_files" }
      return click(page, 'link "Download the March statement"')
    }
  },
  {
    name: "pagination",
    category: "pagination",
    path: "/t/pagination",
    goal: "Find the Teal lamp in the product list (it has several pages) and open its page.",
    plan: ({ page }) => has(page, 'link "Teal lamp"') ? click(page, 'link "Teal lamp"') : click(page, 'link "Next page"')
  },
  // ---- vision: nothing in the DOM to act on
  {
    name: "canvas-button",
    category: "vision",
    path: "/t/canvas-button",
    goal: "Unlock the voucher: press the magenta Reveal button drawn on the panel (it is only a drawing, with no element to click).",
    // The button is drawn at a place drawn at random at each load, and the snapshot has nothing of
    // the canvas: the plan finds the magenta pixels in the screenshot it was sent and clicks their
    // centre, scaled back to CSS pixels as the image note says. Without an image (a service with
    // vision off) there is nothing to go by.
    plan: ({ page, images }) => {
      const image = images.at(-1)
      if (image === undefined) throw new PlanStuck("no screenshot came with the observation: this task needs vision (WA_MODEL_VISION=on)")
      // A click that missed is not repeated: the page says where it landed.
      if (has(page, "Missed at")) throw new PlanStuck(`the click missed the button: ${line(page, "Missed at")}`)
      const blob = findColour(image, magenta)
      if (blob === undefined) throw new PlanStuck("no magenta button in the screenshot")
      const scale = imageScale(page)
      return { tool: "click_at", args: { x: Math.round(blob.x / scale), y: Math.round(blob.y / scale) } }
    }
  }
]

/**
 * A task that opens a new tab: act in it once it is the current tab, switch to it when it is
 * listed but not current, open it otherwise.
 */
const tabStep = (page: string, title: string, action: string, opener: string): PlanStep => {
  const current = /^title: (.*)$/m.exec(page)?.[1] ?? ""
  if (current === title) return click(page, action)
  const tabs = /^tabs: (.*)$/m.exec(page)?.[1] ?? ""
  const tab = new RegExp(`(\\d+)\\*? "${escapeRegExp(title)}"`).exec(tabs)
  if (tab !== null) return { tool: "switch_tab", args: { index: Number(tab[1]) } }
  return click(page, opener)
}

/** The instructions a task's run gets: the start page, the goal, and how the site confirms it. */
export const instructionsFor = (task: EvalTask, site: Pick<EvalSite, "url">): string =>
  `Start page: ${site.url}${task.path}\n${task.goal}\n` +
  `The site confirms a finished task by showing a code (e.g. "Success code: WA-…" or a reference number); ` +
  `call done with that code in your output.`

/** The task name from instructions made by instructionsFor (the scripted model finds its plan by it). */
export const taskOfInstructions = (text: string): { name: string; start: string } | undefined => {
  const match = /Start page: (https?:\/\/[^\s"\\]+\/t\/([a-z0-9-]+))/.exec(text)
  return match === null ? undefined : { start: match[1]!, name: match[2]! }
}
