import { Effect } from "effect"
import { BrowserPool } from "../../../src/browser/pool.ts"
import { startFixtureSites } from "../../../test/fixtures/sites/server.ts"
const site = await startFixtureSites()
const prog = Effect.gen(function*() {
  const pool = yield* BrowserPool
  const t0 = Date.now()
  const title = yield* Effect.scoped(Effect.gen(function*() {
    const lease = yield* pool.acquireContext({ allowPrivateNetworks: true })
    const page = lease.page()!
    yield* Effect.promise(() => page.goto(site.url + "/redirect?to=/page/2"))
    return yield* Effect.promise(() => page.title())
  }))
  console.log(title, Date.now() - t0, yield* pool.stats)
  const r = yield* Effect.scoped(Effect.gen(function*() {
    const lease = yield* pool.acquireContext({ allowPrivateNetworks: false })
    const page = lease.page()!
    const err = yield* Effect.promise(() => page.goto(site.url + "/page/1").then(() => "ok", (e) => String(e).split("\n")[0]))
    return [err, lease.guard.takeRefusals()]
  }))
  console.log(r)
  const r2 = yield* Effect.scoped(Effect.gen(function*() {
    const lease = yield* pool.acquireContext({ allowPrivateNetworks: false, allowedOrigins: [site.url] })
    const page = lease.page()!
    const err = yield* Effect.promise(() => page.goto(site.url + "/redirect?to=" + encodeURIComponent(site.url.replace("127.0.0.1", "localhost") + "/page/2")).then((r) => "ok " + r?.url(), (e) => String(e).split("\n")[0]))
    yield* Effect.sleep(300)
    return [err, page.url(), lease.guard.takeRefusals()]
  }))
  console.log(r2)
})
await Effect.runPromise(prog.pipe(Effect.provide(BrowserPool.layer)))
await site.close()
