/**
 * The fair queue of run work (src/fairness/fair-queue.ts): a lane's bound holds, freed slots go
 * round-robin between owners so a long line of one owner cannot starve another's unit, and a
 * unit interrupted while it waits leaves the line (or gives back a slot granted meanwhile).
 */
import { createServer, type ServerResponse } from "node:http"
import { Deferred, Effect, Fiber } from "effect"
import { FetchHttpClient, HttpClient } from "effect/http"
import { describe, expect, it, vi } from "vitest"
import { FairShares, fairly, fairModelClient, makeFairQueue, WorkOwner } from "../../src/fairness/fair-queue.ts"
import { listenOnLoopback } from "../support/listen.ts"

const limits = { engine_call: 2, page_read: 1, model_call: 1, run_write: 1 }

/** Lets forked fibers run until they block. */
const settle = Effect.yieldNow.pipe(Effect.repeat({ times: 20 }))

describe("fair queue", () => {
  it("with owner A holding 50 queued units and B 1, B's unit is granted in the next turn, not after A's 50", async () => {
    const granted: Array<string> = []
    await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const queue = makeFairQueue(limits)
      // Each unit records its start and holds its slot until its gate opens.
      const gates: Array<Deferred.Deferred<void>> = []
      const unit = (name: string, owner: string) =>
        Effect.gen(function*() {
          const gate = yield* Deferred.make<void>()
          gates.push(gate)
          const fiber = yield* queue.run("engine_call", owner, Effect.sync(() => granted.push(name)).pipe(Effect.andThen(Deferred.await(gate)))).pipe(Effect.forkScoped)
          yield* settle
          return fiber
        })
      // A fills both slots, then queues 50 more; B arrives last with one.
      for (let i = 0; i < 52; i++) yield* unit(`a${i}`, "project-a")
      yield* unit("b0", "project-b")
      expect(granted).toEqual(["a0", "a1"])
      expect(queue.state("engine_call")).toEqual({ limit: 2, active: 2, waiting: 51 })

      // Free the two slots one at a time: A's turn came first (it was waiting first), then B's.
      yield* Deferred.succeed(gates[0]!, undefined)
      yield* settle
      yield* Deferred.succeed(gates[1]!, undefined)
      yield* settle
      expect(granted).toEqual(["a0", "a1", "a2", "b0"])
      expect(queue.state("engine_call")).toEqual({ limit: 2, active: 2, waiting: 49 })
    })))
  })

  it("never has more units of a kind under way than its bound, and every unit runs", async () => {
    const queue = makeFairQueue(limits)
    let running = 0
    let most = 0
    const owners = ["p1", "p2", "p3"]
    await Effect.runPromise(Effect.forEach(
      Array.from({ length: 60 }, (_, i) => i),
      (i) =>
        queue.run("engine_call", owners[i % 3]!, Effect.gen(function*() {
          running++
          most = Math.max(most, running)
          yield* Effect.yieldNow
          running--
        })),
      { concurrency: "unbounded", discard: true }
    ))
    expect(most).toBe(2)
    expect(queue.state("engine_call")).toEqual({ limit: 2, active: 0, waiting: 0 })
  })

  it("a unit interrupted while it waits leaves the line; the next one gets the slot", async () => {
    const queue = makeFairQueue(limits)
    const granted: Array<string> = []
    await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      yield* queue.run("page_read", "a", Deferred.await(gate)).pipe(Effect.forkScoped)
      yield* settle
      const waiting = yield* queue.run("page_read", "b", Effect.sync(() => granted.push("b"))).pipe(Effect.forkScoped)
      const after = yield* queue.run("page_read", "c", Effect.sync(() => granted.push("c"))).pipe(Effect.forkScoped)
      yield* settle
      expect(queue.state("page_read")).toEqual({ limit: 1, active: 1, waiting: 2 })
      yield* Fiber.interrupt(waiting)
      expect(queue.state("page_read")).toEqual({ limit: 1, active: 1, waiting: 1 })
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(after)
      expect(granted).toEqual(["c"])
      expect(queue.state("page_read")).toEqual({ limit: 1, active: 0, waiting: 0 })
    })))
  })

  it("fairly() takes the owner and the queue from the fiber's context", async () => {
    const queue = makeFairQueue(limits)
    const seen = await Effect.runPromise(
      fairly("model_call")(Effect.sync(() => queue.state("model_call").active)).pipe(
        Effect.provideService(WorkOwner, "project-x"),
        Effect.provideService(FairShares, queue)
      )
    )
    expect(seen).toBe(1)
    expect(queue.state("model_call").active).toBe(0)
  })

  it("a model request holds a model slot from request to response only; what its caller does next holds none", async () => {
    // A model endpoint that answers when the test says so.
    const held: Array<ServerResponse> = []
    const server = createServer((_, res) => void held.push(res))
    const { url } = await listenOnLoopback(server)
    const queue = makeFairQueue(limits)
    const model = queue.state.bind(queue, "model_call")
    try {
      await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
        const client = fairModelClient(yield* HttpClient.HttpClient)
        const call = (owner: string) =>
          client.get(`${url}/v1/chat/completions`).pipe(
            Effect.flatMap((response) => response.text),
            // The caller's next work (an agent's tool) runs after the response, outside the slot.
            Effect.flatMap(() => Effect.sync(() => model().active)),
            Effect.provideService(WorkOwner, owner)
          )
        const a = yield* call("a").pipe(Effect.forkScoped)
        const b = yield* call("b").pipe(Effect.forkScoped)
        yield* Effect.promise(() => vi.waitFor(() => expect(held).toHaveLength(1)))
        // One slot: the first request is under way, the second waits for it without being sent.
        expect(model()).toEqual({ limit: 1, active: 1, waiting: 1 })
        held[0]!.end("{}")
        expect(yield* Fiber.join(a)).toBe(1) // b's request took the slot as a's response came back
        yield* Effect.promise(() => vi.waitFor(() => expect(held).toHaveLength(2)))
        held[1]!.end("{}")
        expect(yield* Fiber.join(b)).toBe(0)
        expect(model()).toEqual({ limit: 1, active: 0, waiting: 0 })
      }).pipe(Effect.provide(FetchHttpClient.layer), Effect.provideService(FairShares, queue))))
    } finally {
      server.close()
    }
  })
})
