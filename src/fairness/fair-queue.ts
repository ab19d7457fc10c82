/**
 * Fair shares of the work runs start. Every unit of run work (an engine call, a page read, a
 * model call, a run's progress write) takes a slot of its kind's lane before it starts: each lane
 * has a global bound on units under way in this process, and when units wait, freed slots go
 * round-robin between owners (the project whose run started the unit), one unit per owner per
 * turn. So one tenant's 200 runs cannot starve another's one: the other's unit is granted within
 * the next turn, whatever the length of the first tenant's line.
 *
 * The owner travels in the fiber's context (`WorkOwner`, provided where a run starts executing),
 * so the products call `fairly(kind)` without knowing whose work it is. The queue is the
 * process's (`FairShares`, a reference with a default), so nothing has to be wired to use it;
 * tests provide their own.
 */
import { Context, Effect } from "effect"
import { HttpClient } from "effect/http"

/** Kinds of run work, each with its own lane and bound. */
export type WorkKind = "engine_call" | "page_read" | "model_call" | "run_write"

/**
 * Units of each kind under way at once in one process. Engine calls are cheap HTTP calls; page
 * reads open browser pages; model calls hold model capacity; run writes are the transactions of
 * run progress (events), bounded so request handling keeps most of the SQL pool (20 connections,
 * src/store/database.ts) however many runs are under way.
 */
export const DEFAULT_WORK_LIMITS: Readonly<Record<WorkKind, number>> = {
  engine_call: 48,
  page_read: 8,
  model_call: 16,
  run_write: 6
}

interface Waiter {
  state: "waiting" | "granted" | "gone"
  readonly grant: () => void
  readonly ticket: Ticket
}

/** A unit's hold on a slot; given back once, however the unit ends. */
interface Ticket {
  released: boolean
}

interface Lane {
  readonly limit: number
  active: number
  /** Waiting units per owner, in arrival order. */
  readonly waiting: Map<string, Array<Waiter>>
  /** Owners with waiting units, in the order their next turn comes. */
  readonly turns: Array<string>
}

export interface LaneState {
  readonly limit: number
  readonly active: number
  readonly waiting: number
}

export interface FairQueue {
  /** Runs `work` once a slot of `kind` is granted to `owner`; the slot is freed when it ends. */
  readonly run: <A, E, R>(kind: WorkKind, owner: string, work: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  readonly state: (kind: WorkKind) => LaneState
}

export const makeFairQueue = (limits: Readonly<Record<WorkKind, number>> = DEFAULT_WORK_LIMITS): FairQueue => {
  const lanes = new Map<WorkKind, Lane>()
  const laneOf = (kind: WorkKind) => {
    let lane = lanes.get(kind)
    if (lane === undefined) {
      lane = { limit: Math.max(1, limits[kind]), active: 0, waiting: new Map(), turns: [] }
      lanes.set(kind, lane)
    }
    return lane
  }

  /** Hands free slots to waiting units, one owner's turn after another. */
  const dispatch = (lane: Lane) => {
    while (lane.active < lane.limit && lane.turns.length > 0) {
      const owner = lane.turns.shift()!
      const line = lane.waiting.get(owner)!
      const waiter = line.shift()!
      if (line.length > 0) lane.turns.push(owner)
      else lane.waiting.delete(owner)
      lane.active++
      waiter.state = "granted"
      waiter.grant()
    }
  }

  const release = (lane: Lane, ticket: Ticket) => {
    if (ticket.released) return
    ticket.released = true
    lane.active--
    dispatch(lane)
  }

  const acquire = (lane: Lane, owner: string, ticket: Ticket): Effect.Effect<void> =>
    Effect.suspend(() => {
      if (lane.active < lane.limit && lane.turns.length === 0) {
        lane.active++
        return Effect.void
      }
      return Effect.callback<void>((resume) => {
        const waiter: Waiter = { state: "waiting", grant: () => resume(Effect.void), ticket }
        const line = lane.waiting.get(owner)
        if (line === undefined) {
          lane.waiting.set(owner, [waiter])
          lane.turns.push(owner)
        } else {
          line.push(waiter)
        }
        // Interrupted while waiting: leave the line, or give back a slot granted meanwhile.
        return Effect.sync(() => {
          if (waiter.state === "granted") {
            waiter.state = "gone"
            release(lane, waiter.ticket)
            return
          }
          waiter.state = "gone"
          const waiting = lane.waiting.get(owner)
          if (waiting === undefined) return
          const index = waiting.indexOf(waiter)
          if (index >= 0) waiting.splice(index, 1)
          if (waiting.length === 0) {
            lane.waiting.delete(owner)
            const turn = lane.turns.indexOf(owner)
            if (turn >= 0) lane.turns.splice(turn, 1)
          }
        })
      })
    })

  return {
    run: (kind, owner, work) =>
      Effect.uninterruptibleMask((restore) => {
        const lane = laneOf(kind)
        const ticket: Ticket = { released: false }
        return Effect.flatMap(restore(acquire(lane, owner, ticket)), () => Effect.ensuring(restore(work), Effect.sync(() => release(lane, ticket))))
      }),
    state: (kind) => {
      const lane = laneOf(kind)
      let waiting = 0
      for (const line of lane.waiting.values()) waiting += line.length
      return { limit: lane.limit, active: lane.active, waiting }
    }
  }
}

/** The process's fair queue (a test provides its own). */
export const FairShares = Context.Reference<FairQueue>("wa/runs/FairShares", { defaultValue: () => makeFairQueue() })

/** Whose work the fiber does: the project of the run it executes ("service" for the service's own). */
export const WorkOwner = Context.Reference<string>("wa/runs/WorkOwner", { defaultValue: () => "service" })

/** `work` as a unit of `kind`, in the fair queue of the fiber's owner. */
export const fairly = (kind: WorkKind) => <A, E, R>(work: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  FairShares.use((queue) => WorkOwner.use((owner) => queue.run(kind, owner, work)))

/**
 * An HTTP client whose every request is a unit of the model lane: the model's own time, from the
 * request to its response. Taken at the request, not around `generateText`, which also runs the
 * tools the model asked for (an agent's navigation, its settle): a slot held through those kept
 * the 17th of 20 starting sessions waiting for another session's page to load.
 */
export const fairModelClient = (client: HttpClient.HttpClient): HttpClient.HttpClient =>
  HttpClient.transform(client, (response) => fairly("model_call")(response))
