/**
 * Discriminated unions as `oneOf` in the OpenAPI document (issue 27). Effect's generator writes a
 * union as `anyOf` when a branch carries a check JSON Schema cannot state exactly (a cron
 * expression's validity, say), so that an approximate branch cannot cause a false rejection. A
 * union whose every branch is an object with a required `kind` naming one value of its own (and
 * at most a `null` beside them, for a nullable field) cannot match twice, whatever the branches'
 * approximations: exactly one branch applies, which is what
 * `oneOf` says and what clients generating code from the document need to see (Track's and
 * DoAnything's `schedule`, notification channels, ...).
 *
 * Every union, discriminated or not, lists a nullable field's `{type: "null"}` once.
 */
type Json = Record<string, any>

/** The single `kind` value a branch requires, or undefined when it is not such a branch. */
const kindOf = (branch: Json, components: Json): string | undefined => {
  const resolved = typeof branch?.$ref === "string" ? components[String(branch.$ref).replace("#/components/schemas/", "")] : branch
  if (resolved?.type !== "object" || !Array.isArray(resolved.required) || !resolved.required.includes("kind")) return undefined
  const kind = resolved.properties?.kind
  if (kind?.const !== undefined && typeof kind.const === "string") return kind.const
  return Array.isArray(kind?.enum) && kind.enum.length === 1 && typeof kind.enum[0] === "string" ? kind.enum[0] : undefined
}

/** `{type: "null"}`: the branch of a nullable field, which no object matches. */
const isNull = (branch: Json): boolean => branch?.type === "null" && Object.keys(branch).length === 1

const discriminated = (branches: ReadonlyArray<Json>, components: Json): boolean => {
  const objects = branches.filter((branch) => !isNull(branch))
  if (objects.length < 2) return false
  const kinds = objects.map((branch) => kindOf(branch, components))
  return kinds.every((kind) => kind !== undefined) && new Set(kinds).size === kinds.length
}

const visit = (node: unknown, components: Json): void => {
  if (Array.isArray(node)) {
    for (const item of node) visit(item, components)
    return
  }
  if (typeof node !== "object" || node === null) return
  const schema = node as Json
  if (Array.isArray(schema.anyOf) && schema.oneOf === undefined && discriminated(schema.anyOf, components)) {
    // A nullable field's null may be listed more than once (it would match twice under oneOf): once.
    const nulls = schema.anyOf.filter(isNull)
    schema.oneOf = [...schema.anyOf.filter((branch: Json) => !isNull(branch)), ...nulls.slice(0, 1)]
    delete schema.anyOf
  } else if (Array.isArray(schema.anyOf) && schema.anyOf.filter(isNull).length > 1) {
    // Any other union lists its null once too (a nullable field whose type is itself nullable gets
    // a second {type: "null"} from the generator): the same values, one branch for them.
    const first = schema.anyOf.findIndex(isNull)
    schema.anyOf = schema.anyOf.filter((branch: Json, index: number) => !isNull(branch) || index === first)
  }
  for (const value of Object.values(schema)) visit(value, components)
}

export const discriminatedUnions = <S extends Json>(spec: S): S => {
  visit(spec, spec.components?.schemas ?? {})
  return spec
}
