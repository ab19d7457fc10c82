/** The component name of DeepResearch's JSON artifacts (citations.json, confidence.json) in the document. */
export const RESEARCH_JSON_ARTIFACT = "ResearchJsonArtifact"
