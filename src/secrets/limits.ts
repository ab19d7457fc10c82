/** The bounds of project secrets, shared by the service and the API schemas (defined in src/domain/limits.ts). */
export { MAX_ORIGIN_LENGTH, MAX_ORIGINS, MAX_SECRETS, MAX_VALUE_LENGTH } from "../domain/limits.ts"
