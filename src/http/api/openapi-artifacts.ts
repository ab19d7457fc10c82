/**
 * The JSON artifacts of a DeepResearch run in the document: GET .../artifacts/{aid} answers
 * citations.json or confidence.json as application/json, one of the two domain schemas
 * (src/domain/research.ts). Added as a component with the whole document, not in the endpoint,
 * so the SDK (which loads the endpoints) carries no JSON Schema generator.
 */
import { CitationsArtifact, ConfidenceArtifact } from "../../domain/research.ts"
import { RESEARCH_JSON_ARTIFACT } from "./openapi-artifact-name.ts"
import { jsonSchemas } from "./openapi-events.ts"

export const researchArtifacts = (spec: Record<string, any>): Record<string, any> => {
  const { schemas: [citations, confidence], definitions } = jsonSchemas([CitationsArtifact, ConfidenceArtifact])
  const components = (spec["components"] ??= {})
  const schemas = (components["schemas"] ??= {})
  Object.assign(schemas, definitions)
  schemas[RESEARCH_JSON_ARTIFACT] = {
    description: "citations.json (every cited source by its number in final.md) or confidence.json (each section's claims with their confidence)",
    oneOf: [citations, confidence]
  }
  return spec
}
