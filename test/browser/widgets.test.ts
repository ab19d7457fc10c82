/**
 * The widget classes of issue 28 on the fixture pages of src/eval/widgets.ts, with real
 * Chromium: each test acts through refs of the observation and reads the page's own account of
 * its state, which changes only when the interaction truly worked.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { click, clickAt, drag, navigate, type, typeAt } from "../../src/browser/actions.ts"
import { observe } from "../../src/browser/observe.ts"
import { leaseAndSite, refFor, TestLayer } from "./support.ts"

const snapshotOf = Effect.fnUntraced(function*(lease: Parameters<typeof observe>[0]) {
  return (yield* observe(lease)).snapshot
})

layer(TestLayer, { excludeTestServices: true })("widgets", (it) => {
  it.effect("a radio or checkbox hidden inside its label tile is operated through the label's ref", () =>
    Effect.gen(function*() {
      const { lease, site } = yield* leaseAndSite
      yield* navigate(lease, `${site.url}/widgets/tiles`)
      const first = yield* snapshotOf(lease)
      yield* click(lease, refFor(first, /radio "Pro 50 projects"/))
      yield* click(lease, refFor(first, /checkbox "Bill yearly"/))
      const after = yield* snapshotOf(lease)
      assert.include(after, "Plan: pro; billing: yearly")
      assert.match(after, /radio "Pro 50 projects" \[e\d+\] checked/)
      assert.match(after, /checkbox "Bill yearly" \[e\d+\] checked/)
      assert.notMatch(after, /radio "Basic 5 projects" \[e\d+\] checked/)
    }))

  it.effect("Bootstrap btn-check: the clipped input's label is the control, with the input's checked state", () =>
    Effect.gen(function*() {
      const { lease, site } = yield* leaseAndSite
      yield* navigate(lease, `${site.url}/widgets/btn-check`)
      const first = yield* snapshotOf(lease)
      assert.match(first, /checkbox "Basil" \[e\d+\] checked/)
      assert.match(first, /radio "Small" \[e\d+\] checked/)
      // One ref per control: the clipped inputs themselves are not listed.
      assert.strictEqual(first.match(/checkbox "Cheese"/g)?.length, 1)
      yield* click(lease, refFor(first, /checkbox "Cheese"/))
      yield* click(lease, refFor(first, /radio "Large"/))
      const after = yield* snapshotOf(lease)
      assert.include(after, "Toppings: cheese, basil; size: large")
      assert.match(after, /checkbox "Cheese" \[e\d+\] checked/)
      assert.notMatch(after, /radio "Small" \[e\d+\] checked/)
    }))

  it.effect("icon-only div and span controls with aria-label or title get a ref named by it", () =>
    Effect.gen(function*() {
      const { lease, site } = yield* leaseAndSite
      yield* navigate(lease, `${site.url}/widgets/icons`)
      const first = yield* snapshotOf(lease)
      yield* click(lease, refFor(first, /clickable "Add to favourites"/))
      yield* click(lease, refFor(first, /clickable "Delete article"/))
      assert.include(yield* snapshotOf(lease), "Favourite: yes; deleted: yes")
    }))

  it.effect("drag reorders an HTML5 drag-and-drop sortable list", () =>
    Effect.gen(function*() {
      const { lease, site } = yield* leaseAndSite
      yield* navigate(lease, `${site.url}/widgets/sortable`)
      const first = yield* snapshotOf(lease)
      const outcome = yield* drag(lease, refFor(first, /draggable "Deploy"/), { ref: refFor(first, /draggable "Write changelog"/) })
      assert.include(outcome.message, "dragged")
      assert.include(yield* snapshotOf(lease), "Order: Deploy > Write changelog > Run tests > Tag release")
    }))

  it.effect("drag moves a pointer-event kanban card into an empty column (a drop zone with a ref)", () =>
    Effect.gen(function*() {
      const { lease, site } = yield* leaseAndSite
      yield* navigate(lease, `${site.url}/widgets/kanban`)
      const first = yield* snapshotOf(lease)
      yield* drag(lease, refFor(first, /draggable "Fix login bug"/), { ref: refFor(first, /dropzone "Done"/) })
      const after = yield* snapshotOf(lease)
      assert.include(after, "To do: Update docs; Doing: Design review; Done: Fix login bug")
      // Onto a card: the card's column takes it.
      yield* drag(lease, refFor(after, /draggable "Design review"/), { ref: refFor(after, /draggable "Fix login bug"/) })
      assert.include(yield* snapshotOf(lease), "Doing: -; Done: Fix login bug, Design review")
    }))

  it.effect("drag by an offset moves a slider built of divs; its handle shows track and position", () =>
    Effect.gen(function*() {
      const { lease, site } = yield* leaseAndSite
      yield* navigate(lease, `${site.url}/widgets/slider`)
      const first = yield* snapshotOf(lease)
      assert.match(first, /draggable \[e\d+\] track=300px at=90px/)
      yield* drag(lease, refFor(first, /draggable/), { dx: 120, dy: 0 })
      const after = yield* snapshotOf(lease)
      assert.include(after, "Volume: 70")
      assert.match(after, /track=300px at=210px/)
    }))

  it.effect("a click on a covered element fails naming the cover and the ref that closes it", () =>
    Effect.gen(function*() {
      const { lease, site } = yield* leaseAndSite
      yield* navigate(lease, `${site.url}/widgets/cookie-wall`)
      const first = yield* snapshotOf(lease)
      const buy = refFor(first, /button "Buy now"/)
      const error = yield* Effect.flip(click(lease, buy))
      assert.strictEqual(error._tag, "ActionFailed")
      assert.include(error.message, `${buy} is covered by <div#wall.cookie-wall>`)
      const accept = /"Accept all" \[(e\d+)\]/.exec(error.message)?.[1]
      assert.strictEqual(accept, refFor(first, /button "Accept all"/))
      yield* click(lease, accept!)
      yield* click(lease, buy)
      assert.include(yield* snapshotOf(lease), "Cart: 1 blue mug")
    }))

  it.effect("the observation after type shows suggestions that appear 300 ms later", () =>
    Effect.gen(function*() {
      const { lease, site } = yield* leaseAndSite
      yield* navigate(lease, `${site.url}/widgets/autocomplete`)
      const first = yield* snapshotOf(lease)
      yield* type(lease, refFor(first, /textbox "Destination"/), "Ber")
      const after = yield* snapshotOf(lease)
      assert.match(after, /option "Berlin" \[e\d+\]/)
      assert.notInclude(after, "Lisbon")
      yield* click(lease, refFor(after, /option "Bergen"/))
      assert.include(yield* snapshotOf(lease), "Destination: Bergen")
    }))

  it.effect("click_at and type_at act at viewport coordinates", () =>
    Effect.gen(function*() {
      const { lease, site } = yield* leaseAndSite
      yield* navigate(lease, `${site.url}/take-control`)
      const typed = yield* typeAt(lease, 190, 140, "4711")
      assert.include(typed.message, "<input>")
      const clicked = yield* clickAt(lease, 120, 224)
      assert.include(clicked.message, `<button> "Verify"`)
      assert.include(yield* snapshotOf(lease), "Verified by a person: 4711")
      const outside = yield* Effect.flip(clickAt(lease, 5_000, 10))
      assert.include(outside.message, "outside the viewport")
    }))

  it.effect("a tool error is plain text with the timeout that applied", () =>
    Effect.gen(function*() {
      const { lease, site } = yield* leaseAndSite
      yield* navigate(lease, `${site.url}/page/1`)
      yield* Effect.promise(() =>
        lease.page()!.evaluate(() => document.body.insertAdjacentHTML("beforeend", "<button disabled>Frozen</button>"))
      )
      const ref = refFor(yield* snapshotOf(lease), /button "Frozen"/)
      const error = yield* Effect.flip(click(lease, ref, { actionMs: 1_500, navigationMs: 5_000, settleMs: 500 }))
      assert.strictEqual(error._tag, "ActionTimeout")
      assert.notMatch(error.message, /\u001b/)
      assert.include(error.message, `click ${ref} did not finish within 1500 ms: `)
      // Playwright's log names what it waited for: "element is not enabled" once it has checked, or
      // (on a loaded host, before its first check) "waiting for element to be visible, enabled and stable".
      assert.match(error.message, /not enabled|visible, enabled and stable/)
    }))
})
