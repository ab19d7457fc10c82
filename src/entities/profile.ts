/**
 * The Profile entity (Effect Cluster), one per profile: it executes a profile's browser work, the
 * login probe, one at a time, on whichever runner holds the profile's shard (that runner's browser
 * pool opens the fresh context). The profile's lease itself is not kept here but in PostgreSQL
 * (src/profiles/profile-store.ts), taken in the transaction that inserts the session: it must hold
 * across nodes and survive the entity moving to another runner.
 */
import { Effect, Layer, Schema } from "effect"
import { Entity } from "effect/cluster"
import { Rpc } from "effect/rpc"
import { BrowserPool } from "../browser/pool.ts"
import { AppConfig } from "../config/config.ts"
import { ProfileId, ProfileState } from "../domain/profile.ts"
import { runProbe } from "../profiles/probe.ts"
import { ProfileStore } from "../profiles/profile-store.ts"

export const ProbeResultSchema = Schema.Literals(["logged_in", "logged_out", "unknown"])

/** Probes the profile's saved state on the site's start URL and records what it found. */
export const Probe = Rpc.make("Probe", {
  payload: { siteId: Schema.String, displayLabel: Schema.optional(Schema.NullOr(Schema.String)) },
  success: Schema.Struct({
    probe_result: ProbeResultSchema,
    state: ProfileState,
    final_url: Schema.NullOr(Schema.String),
    reason: Schema.String
  })
})

export const ProfileEntity = Entity.make("Profile", [Probe])

export const ProfileEntityLive = ProfileEntity.toLayer(
  Effect.gen(function*() {
    const address = yield* Entity.CurrentAddress
    // A Profile entity is addressed by its profile id.
    const profileId = ProfileId.make(address.entityId)
    const profiles = yield* ProfileStore
    const pool = yield* BrowserPool
    const config = yield* AppConfig
    return ProfileEntity.of({
      Probe: ({ payload }) =>
        Effect.gen(function*() {
          const login = yield* profiles.findLogin(profileId, payload.siteId)
          if (login === undefined) return { probe_result: "unknown" as const, state: "active" as const, final_url: null, reason: `no login for site ${payload.siteId}` }
          const saved = yield* Effect.result(profiles.loadState(profileId))
          const report = saved._tag === "Failure"
            ? { result: "unknown" as const, finalUrl: null, reason: saved.failure.reason }
            : yield* runProbe(pool, {
              startUrl: login.start_url,
              loggedInSelector: login.logged_in_selector,
              loggedOutSelector: login.logged_out_selector,
              storageState: saved.success,
              allowPrivateNetworks: config.allowPrivateNetworks
            })
          const state: ProfileState = report.result === "logged_out" ? "logged_out" : "active"
          const profile = yield* profiles.recordProbe(profileId, payload.siteId, report.result, {
            state,
            alive: report.result === "logged_in",
            failureReason: report.result === "logged_in" ? null : `${report.result === "logged_out" ? "logged_out" : "probe_failed"} on ${payload.siteId}: ${report.reason}`.slice(0, 1000)
          }, payload.displayLabel)
          yield* Effect.logInfo("profile probed").pipe(Effect.annotateLogs({ profile_id: profileId, site_id: payload.siteId, probe_result: report.result, reason: report.reason }))
          return { probe_result: report.result, state: profile.state, final_url: report.finalUrl, reason: report.reason }
        }).pipe(Effect.orDie)
    })
  }),
  { maxIdleTime: "1 minute" }
).pipe(Layer.provide(ProfileStore.layer))
