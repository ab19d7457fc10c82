import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import {
  click,
  goBack,
  hover,
  navigate,
  pressKey,
  scroll,
  selectOption,
  switchTab,
  type,
  waitFor
} from "../../src/browser/actions.ts"
import { observe } from "../../src/browser/observe.ts"
import { leaseAndSite, refFor, TestLayer } from "./support.ts"

layer(TestLayer, { excludeTestServices: true })("actions", (it) => {
  it.effect("types into a form, selects an option, ticks a box and submits", () =>
    Effect.gen(function*() {
      const { lease, site } = yield* leaseAndSite
      yield* navigate(lease, `${site.url}/form`)
      const form = (yield* observe(lease)).snapshot
      yield* type(lease, refFor(form, /textbox "Message"/), "multi word message")
      yield* selectOption(lease, refFor(form, /combobox "Colour"/), ["Blue"])
      yield* click(lease, refFor(form, /checkbox "Newsletter"/))
      const outcome = yield* type(lease, refFor(form, /textbox "Name"/), "Ada", { submit: true })
      assert.isTrue(outcome.navigated)
      assert.include(outcome.url, "/form/result")
      const result = (yield* observe(lease)).snapshot
      assert.include(result, "# Thanks, Ada")
      assert.include(result, "colour: blue")
      assert.include(result, "newsletter: yes")
      assert.include(result, "message: multi word message")
    }))

  it.effect("type replaces a field's text as a person's paste would: input events fire, a controlled field sees each value; other fields fall back to Playwright", () =>
    Effect.gen(function*() {
      const { lease, site } = yield* leaseAndSite
      yield* navigate(lease, `${site.url}/page/1`)
      const page = lease.page()!
      // A controlled field (as React keeps it: value tracked from input events), a textarea, a
      // read-only field and a number field.
      yield* Effect.promise(() => page.setContent(`
        <label>Name <input id="name" value="old value"></label>
        <label>Notes <textarea id="notes">first line</textarea></label>
        <label>Code <input id="code" value="fixed" readonly></label>
        <label>Count <input id="count" type="number" value="1"></label>
        <p id="log"></p>
        <script>
          const seen = []
          for (const id of ["name", "notes"]) document.getElementById(id).addEventListener("input", (e) => {
            seen.push(id + "=" + e.target.value)
            document.getElementById("log").textContent = seen.join(" | ")
          })
        </script>`))
      const form = (yield* observe(lease)).snapshot
      yield* type(lease, refFor(form, /textbox "Name"/), "Ada Lovelace")
      yield* type(lease, refFor(form, /textbox "Notes"/), "two\nlines")
      yield* type(lease, refFor(form, /spinbutton "Count"/), "42")
      const values = yield* Effect.promise(() => page.evaluate(() => ({
        name: (document.getElementById("name") as HTMLInputElement).value,
        notes: (document.getElementById("notes") as HTMLTextAreaElement).value,
        count: (document.getElementById("count") as HTMLInputElement).value,
        log: document.getElementById("log")!.textContent
      })))
      assert.deepStrictEqual({ ...values, log: undefined }, { name: "Ada Lovelace", notes: "two\nlines", count: "42", log: undefined })
      // One input event carries the whole new name (no half-typed values); the textarea's last one its whole text.
      assert.match(values.log ?? "", /^name=Ada Lovelace \| notes=.*notes=two\nlines$|^name=Ada Lovelace \| notes=two\nlines$/s)
      // A read-only field is not written: Playwright's fill waits for it to be editable and fails.
      const refused = yield* Effect.flip(type(lease, refFor(form, /textbox "Code"/), "changed", {}, { actionMs: 500, navigationMs: 5_000, settleMs: 500 }))
      assert.include(refused.message, "editable")
      assert.strictEqual(yield* Effect.promise(() => page.evaluate(() => (document.getElementById("code") as HTMLInputElement).value)), "fixed")
    }))

  it.effect("waits for content rendered by JavaScript after a delay", () =>
    Effect.gen(function*() {
      const { lease, site } = yield* leaseAndSite
      yield* navigate(lease, `${site.url}/js-rendered?delay=800`)
      const outcome = yield* waitFor(lease, { text: "Rendered by JavaScript", timeoutMs: 10_000 })
      assert.include(outcome.message, "found")
      const o = (yield* observe(lease)).snapshot
      assert.include(o, "Rendered by JavaScript")
      const late = refFor(o, /button "Late button"/)
      yield* waitFor(lease, { ref: late, timeoutMs: 1_000 })
      const missing = yield* Effect.flip(waitFor(lease, { text: "Never shown", timeoutMs: 300 }))
      assert.strictEqual(missing._tag, "ActionTimeout")
    }))

  it.effect("keeps a login cookie across pages of the same context", () =>
    Effect.gen(function*() {
      const { lease, site } = yield* leaseAndSite
      yield* navigate(lease, `${site.url}/account`)
      assert.include((yield* observe(lease)).snapshot, "Not logged in")
      yield* navigate(lease, `${site.url}/login`)
      const login = (yield* observe(lease)).snapshot
      yield* type(lease, refFor(login, /textbox "Username"/), "grace")
      yield* type(lease, refFor(login, /textbox "Password"/), "secret")
      yield* click(lease, refFor(login, /button "Sign in"/))
      assert.include((yield* observe(lease)).snapshot, "Logged in as grace")
      yield* navigate(lease, `${site.url}/page/1`)
      yield* navigate(lease, `${site.url}/account`)
      assert.include((yield* observe(lease)).snapshot, "Logged in as grace")
    }))

  it.effect("lists a new tab opened by a link and switches to it", () =>
    Effect.gen(function*() {
      const { lease, site } = yield* leaseAndSite
      yield* navigate(lease, `${site.url}/new-tab`)
      const page = (yield* observe(lease)).snapshot
      const opened = yield* click(lease, refFor(page, /link "Open page 2 in a new tab"/))
      assert.deepStrictEqual(opened.newTabs, [1])
      const o = yield* observe(lease)
      assert.strictEqual(o.tabs.length, 2)
      assert.isTrue(o.tabs[0]!.active)
      assert.include(o.text, "tabs: 0*")
      yield* switchTab(lease, 1)
      yield* waitFor(lease, { text: "Page 2", timeoutMs: 5_000 })
      const second = yield* observe(lease)
      assert.include(second.url, "/page/2")
      assert.isTrue(second.tabs[1]!.active)
      // The popup button opens a third tab; switch back to the first and use it.
      yield* switchTab(lease, 0)
      yield* click(lease, refFor((yield* observe(lease)).snapshot, /button "Open page 3 in a popup"/))
      // A window.open() tab is announced a moment after the click; the next observations list it.
      let tabs = 0
      for (let i = 0; i < 50 && tabs < 3; i++) {
        tabs = (yield* observe(lease)).tabs.length
        if (tabs < 3) yield* Effect.sleep("100 millis")
      }
      assert.strictEqual(tabs, 3)
      const bad = yield* Effect.flip(switchTab(lease, 7))
      assert.strictEqual(bad._tag, "ActionFailed")
    }))

  it.effect("a click that opens a tab returns once the tab's first page is there (a slow one too)", () =>
    Effect.gen(function*() {
      const { lease, site } = yield* leaseAndSite
      yield* navigate(lease, `${site.url}/page/1`)
      yield* Effect.promise(() => lease.page()!.setContent(`<a href="${site.url}/slow?delay=700" target="_blank">Slow report</a>`))
      const opened = yield* click(lease, refFor((yield* observe(lease)).snapshot, /link "Slow report"/))
      assert.deepStrictEqual(opened.newTabs, [1])
      // Its document, not the blank one a new tab shows until its first load commits.
      const text = yield* Effect.promise(() => lease.pages()[1]!.evaluate(() => document.body?.innerText ?? ""))
      assert.include(text, "Slow page loaded")
    }))

  it.effect("accepts JavaScript dialogs and reports them", () =>
    Effect.gen(function*() {
      const { lease, site } = yield* leaseAndSite
      yield* navigate(lease, `${site.url}/dialog`)
      const outcome = yield* click(lease, refFor((yield* observe(lease)).snapshot, /button "Delete"/))
      assert.include(outcome.message, `confirm "Delete it?"`)
      assert.include((yield* observe(lease)).snapshot, "Confirmed")
    }))

  it.effect("a stale ref fails with ElementNotFound", () =>
    Effect.gen(function*() {
      const { lease, site } = yield* leaseAndSite
      yield* navigate(lease, `${site.url}/page/1`)
      const ref = refFor((yield* observe(lease)).snapshot, /link "Next page"/)
      yield* navigate(lease, `${site.url}/page/3`)
      const error = yield* Effect.flip(click(lease, ref))
      assert.strictEqual(error._tag, "ElementNotFound")
      const malformed = yield* Effect.flip(click(lease, "button-7"))
      assert.strictEqual(malformed._tag, "ElementNotFound")
    }))

  it.effect("follows links, goes back, scrolls, hovers and presses keys", () =>
    Effect.gen(function*() {
      const { lease, site } = yield* leaseAndSite
      yield* navigate(lease, `${site.url}/page/1`)
      const next = yield* click(lease, refFor((yield* observe(lease)).snapshot, /link "Next page"/))
      assert.isTrue(next.navigated)
      assert.include(next.url, "/page/2")
      const back = yield* goBack(lease)
      assert.include(back.url, "/page/1")

      yield* navigate(lease, `${site.url}/list?n=200`)
      const down = yield* scroll(lease, { direction: "down", amount: 600 })
      assert.match(down.message, /page at [1-9]\d*\//)
      const list = (yield* observe(lease)).snapshot
      const last = refFor(list, /link "Item 199"/)
      yield* scroll(lease, { ref: last })
      yield* hover(lease, last)
      const y = yield* Effect.promise(() => lease.page()!.evaluate(() => window.scrollY))
      assert.isAbove(y, 1000)
      yield* pressKey(lease, "Home")
      yield* waitFor(lease, { timeoutMs: 200 })
      const top = yield* Effect.promise(() => lease.page()!.evaluate(() => window.scrollY))
      assert.isBelow(top, y)
    }))

  it.effect("a slow page within its budget is waited for; a bad key name is a typed failure", () =>
    Effect.gen(function*() {
      const { lease, site } = yield* leaseAndSite
      const slow = yield* navigate(lease, `${site.url}/slow?delay=1200`)
      assert.include(slow.url, "/slow")
      assert.include((yield* observe(lease)).snapshot, "Slow page loaded")
      const timeout = yield* Effect.flip(
        navigate(lease, `${site.url}/slow?delay=5000`, { actionMs: 1_000, navigationMs: 1_000, settleMs: 500 })
      )
      assert.strictEqual(timeout._tag, "ActionTimeout")
      const badKey = yield* Effect.flip(pressKey(lease, "NoSuchKey"))
      assert.strictEqual(badKey._tag, "ActionFailed")
    }))
})
