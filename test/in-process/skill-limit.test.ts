/**
 * The most skills a project may have holds under concurrent creates: the count and the insert are
 * one transaction under a per-project lock (src/store/skills.ts), so 30 creates at once against a
 * limit of 5 make exactly 5 skills and 25 refusals.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SkillStore } from "../../src/store/skills.ts"
import { inProcess, Tenant } from "./harness.ts"

layer(inProcess({ WA_STEP_SCREENSHOTS: "false" }), { excludeTestServices: true })("skill limit", (it) => {
  it.effect("30 concurrent creates against a limit of 5: 5 skills, 25 SkillLimitReached", () =>
    Effect.gen(function*() {
      const tenant = yield* Tenant
      const store = yield* SkillStore
      const outcomes = yield* Effect.forEach(Array.from({ length: 30 }, (_, i) => i), (i) =>
        Effect.result(store.create(tenant.projectId, `skill_${i}`, {
          description: "d",
          parameters: { type: "object", properties: {} },
          kind: "instructions",
          instructions: "do it",
          steps: null,
          sourceRunId: null
        }, 5)), { concurrency: "unbounded" })
      expect(outcomes.filter((outcome) => outcome._tag === "Success")).toHaveLength(5)
      const refused = outcomes.flatMap((outcome) => outcome._tag === "Failure" ? [outcome.failure._tag] : [])
      expect(refused).toEqual(Array.from({ length: 25 }, () => "SkillLimitReached"))
      expect(yield* store.list(tenant.projectId, 100, undefined)).toHaveLength(5)
    }).pipe(Effect.provide(SkillStore.layer)))
})
