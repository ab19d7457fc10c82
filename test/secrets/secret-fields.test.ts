/**
 * Typing secrets in real Chromium (src/browser/actions.ts with `secret`): the value goes into a
 * text field of the expected origin only, the field is masked (attributes for recordings and
 * observations, text security on screen), and the outcome names the placeholder, never the value.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { fieldOrigin, navigate, pageOrigin, type, typeAt } from "../../src/browser/actions.ts"
import { observe } from "../../src/browser/observe.ts"
import { leaseAndSite, refFor, TestLayer } from "../browser/support.ts"

const VALUE = "s3cret-value-for-fields"

layer(TestLayer, { excludeTestServices: true })("secret fields", (it) => {
  it.effect("types a secret into a text field of its origin, masked everywhere; refuses another origin or a non-field", () =>
    Effect.gen(function*() {
      const { lease, site } = yield* leaseAndSite
      yield* navigate(lease, `${site.url}/form`)
      const form = (yield* observe(lease)).snapshot
      const name = refFor(form, /textbox "Name"/)
      const origin = yield* fieldOrigin(lease, name)
      assert.strictEqual(origin, site.url)

      const outcome = yield* type(lease, name, VALUE, { secret: { shown: "{{secret:pw}}", origin } })
      assert.include(outcome.message, "{{secret:pw}}")
      assert.notInclude(outcome.message, VALUE)
      const page = lease.page()!
      const field = yield* Effect.promise(() =>
        page.locator("#name").evaluate((el: HTMLInputElement) => ({
          value: el.value,
          secret: el.hasAttribute("data-wa-secret"),
          recordedAsPassword: el.hasAttribute("data-rr-is-password"),
          textSecurity: getComputedStyle(el).getPropertyValue("-webkit-text-security")
        }))
      )
      assert.deepStrictEqual(field, { value: VALUE, secret: true, recordedAsPassword: true, textSecurity: "disc" })
      const after = (yield* observe(lease)).snapshot
      assert.notInclude(after, VALUE)
      assert.match(after, /textbox "Name" \[e\d+\] ="••••••••"/)

      // The field's document is not on the origin the secret was released for: nothing is typed.
      const email = refFor(after, /textbox "Email"/)
      const elsewhere = yield* Effect.flip(type(lease, email, VALUE, { secret: { shown: "{{secret:pw}}", origin: "https://example.com" } }))
      assert.include(elsewhere.message, `is now on ${site.url}, not https://example.com`)
      assert.notInclude(elsewhere.message, VALUE)
      assert.strictEqual(yield* Effect.promise(() => page.locator("input[name=email]").inputValue()), "")

      // A button is not a field.
      const send = refFor(after, /button "Send"/)
      const notField = yield* Effect.flip(type(lease, send, VALUE, { secret: { shown: "{{secret:pw}}", origin } }))
      assert.include(notField.message, "is not a text field")
    }))

  it.effect("a field inside a frame of another origin has that origin", () =>
    Effect.gen(function*() {
      const { lease, site } = yield* leaseAndSite
      const other = site.url.replace("127.0.0.1", "localhost")
      yield* navigate(lease, `${site.url}/with-frame?src=${encodeURIComponent(`${other}/form`)}`)
      const snapshot = (yield* observe(lease)).snapshot
      const inner = refFor(snapshot, /textbox "Name"/)
      assert.match(inner, /^f\d+e\d+$/)
      assert.strictEqual(yield* fieldOrigin(lease, inner), other)
      assert.strictEqual(yield* pageOrigin(lease), site.url)
    }))

  it.effect("type_at types a secret into the field the click focused, and refuses a point that is not a field", () =>
    Effect.gen(function*() {
      const { lease, site } = yield* leaseAndSite
      yield* navigate(lease, `${site.url}/take-control`)
      const origin = yield* pageOrigin(lease)
      const outcome = yield* typeAt(lease, 100, 140, VALUE, { secret: { shown: "{{secret:code}}", origin } })
      assert.include(outcome.message, "{{secret:code}}")
      assert.notInclude(outcome.message, VALUE)
      const page = lease.page()!
      assert.strictEqual(yield* Effect.promise(() => page.locator("#code").inputValue()), VALUE)
      assert.isTrue(yield* Effect.promise(() => page.locator("#code").evaluate((el) => el.hasAttribute("data-rr-is-password"))))
      const refused = yield* Effect.flip(typeAt(lease, 600, 600, VALUE, { secret: { shown: "{{secret:code}}", origin } }))
      assert.include(refused.message, "is not a text field")
    }))
})
