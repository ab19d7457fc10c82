/**
 * Workspaces: a project's file areas, shared by its sessions (a DoAnything session created with
 * `workspace_id` gives its agent the file tools). `/v1/projects/{pid}/workspaces` (create, list,
 * get, delete), their files (upload as a raw body, list, get, delete), and the signed download
 * URL of a file (`/v1/workspace_files/...`, no API key: the signature is the credential).
 */
import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { BadRequest, Forbidden, NotFound, ValidationError } from "../../domain/api-errors.ts"
import { NamePageQuery, PageQuery } from "../../domain/pagination.ts"
import { SignedUrlQuery } from "../../domain/wire/common.ts"
import { WorkspaceId } from "../../domain/id-schemas.ts"
import {
  CreateWorkspaceRequest,
  PayloadTooLarge,
  WorkspaceFileListResponse,
  WorkspaceFileResponse,
  WorkspaceListResponse,
  WorkspaceResponse
} from "../../domain/wire/workspaces.ts"
import { MAX_PATH_PARAM_LENGTH, ProjectIdParam } from "./schemas.ts"
import { Authentication, Idempotency, RateLimit } from "./security.ts"

const WorkspaceIdParam = WorkspaceId.check(Schema.isMaxCodePoints(64))
// The 255-character limit applies to the name in NFC (its NFD twin may be longer), so the store checks it.
const FileNameParam = Schema.String.check(Schema.isMinCodePoints(1), Schema.isMaxCodePoints(MAX_PATH_PARAM_LENGTH)).annotate({
  description: "the file's name, percent-encoded in the path; 1 to 255 characters in Unicode NFC (a name is stored and " +
    "looked up in NFC, so its NFD spelling names the same file); no / or \\, no control or bidirectional-override characters"
})
const workspaceParams = { ...ProjectIdParam, wid: WorkspaceIdParam }
const fileParams = { ...workspaceParams, name: FileNameParam }

export class WorkspacesApi extends HttpApiGroup.make("workspaces")
  .add(
    HttpApiEndpoint.post("create", "/", {
      params: ProjectIdParam,
      payload: CreateWorkspaceRequest,
      success: WorkspaceResponse.annotate({ httpApiStatus: 201 }),
      error: ValidationError
    }).annotate(HttpApi.PayloadParseOptions, { errors: "all", onExcessProperty: "error" }),
    HttpApiEndpoint.get("list", "/", {
      params: ProjectIdParam,
      query: PageQuery,
      success: WorkspaceListResponse,
      error: BadRequest
    }),
    HttpApiEndpoint.get("get", "/:wid", { params: workspaceParams, success: WorkspaceResponse, error: NotFound }),
    HttpApiEndpoint.delete("delete", "/:wid", { params: workspaceParams, success: WorkspaceResponse, error: NotFound }),
    // Files by name; the cursor holds the last name of the page (up to 255 characters, hence NamePageQuery).
    HttpApiEndpoint.get("listFiles", "/:wid/files", {
      params: workspaceParams,
      query: NamePageQuery,
      success: WorkspaceFileListResponse,
      error: [BadRequest, NotFound]
    }),
    HttpApiEndpoint.get("getFile", "/:wid/files/:name", { params: fileParams, success: WorkspaceFileResponse, error: NotFound }),
    HttpApiEndpoint.delete("deleteFile", "/:wid/files/:name", { params: fileParams, success: WorkspaceFileResponse, error: NotFound })
  )
  .middleware(Idempotency)
  .middleware(RateLimit)
  .middleware(Authentication)
  .prefix("/v1/projects/:pid/workspaces")
  .annotateMerge(OpenApi.annotations({
    title: "Workspaces",
    description: "File areas of a project. A DoAnything session created with workspace_id gives its agent the tools " +
      "upload_file, list_files, read_file and write_file, and files its pages download are saved there " +
      "(run.file_downloaded events). Deleting a workspace deletes its files."
  }))
{}

/**
 * The upload is its own group: its body is streamed into the database as it arrives (not read
 * whole, so the request-body limit WA_MAX_BODY_BYTES does not apply; WA_WORKSPACE_MAX_FILE_BYTES
 * does), and it takes no Idempotency-Key (a PUT of the same bytes to the same name is
 * idempotent by itself).
 */
export class WorkspaceUploadApi extends HttpApiGroup.make("workspace_upload")
  .add(
    HttpApiEndpoint.put("putFile", "/:wid/files/:name", {
      params: fileParams,
      payload: HttpApiSchema.StreamUint8Array({ contentType: "application/octet-stream" }),
      success: WorkspaceFileResponse.annotate({ httpApiStatus: 201 }),
      error: [NotFound, ValidationError, PayloadTooLarge, BadRequest]
    }).annotateMerge(OpenApi.annotations({
      description: "Uploads the request body as the file `name` (replacing a file of that name). Any Content-Type " +
        "is accepted and kept as the file's type. Larger than WA_WORKSPACE_MAX_FILE_BYTES: 413 payload_too_large, and nothing is stored."
    }))
  )
  .middleware(RateLimit)
  .middleware(Authentication)
  .prefix("/v1/projects/:pid/workspaces")
  .annotateMerge(OpenApi.annotations({ title: "Workspace uploads", description: "Streamed file uploads (raw body)." }))
{}

export class WorkspaceDownloadApi extends HttpApiGroup.make("workspace_download")
  .add(
    HttpApiEndpoint.get("download", "/v1/workspace_files/:wid/:name", {
      params: { wid: WorkspaceIdParam, name: FileNameParam },
      query: SignedUrlQuery,
      // Sent as the file's own type (its content_type: text/csv, image/png, ...), so any.
      success: HttpApiSchema.StreamUint8Array({ contentType: "*/*" }),
      error: [NotFound, Forbidden]
    })
  )
  .annotateMerge(OpenApi.annotations({
    title: "Workspace downloads",
    description: "Signed, short-lived file URLs (no API key needed); an expired or altered URL is 403 " +
      "(url_expired or invalid_signature). Get a fresh URL from the file's GET."
  }))
{}
