/**
 * Which Chromium the pool launches, and the bundled one as the last resort.
 *
 * Order (WA_BROWSER_CDP_URL, a remote browser, is decided by the pool before any of this):
 *   1. CHROMIUM_PATH, when set (a missing binary there is an error, never silently replaced);
 *   2. a system Chromium: Playwright's browser cache, /usr/bin/chromium, /usr/bin/chromium-browser;
 *   3. the Chromium shipped inside the npm package @sparticuz/chromium (a dependency, so
 *      `npm install` / `npm ci` bring it from the registry; no download at install or run time).
 * WA_BROWSER=bundled skips 1 and 2; WA_BROWSER=system never uses 3.
 *
 * The bundled binary is brotli-compressed in the package (bin/chromium.br, linux-x64 only). It is
 * unpacked once, on the first launch, into <data dir>/chromium/<package version>/ (about 210 MB,
 * 1.5 s) and reused by later starts; other versions' directories are removed then. The package's
 * own `executablePath()` is not used: it unpacks to a fixed /tmp/chromium and trusts whatever file
 * is there (another version after an upgrade, another user's file, a half-written one).
 *
 * The binary links libnss3, libnspr4 and libexpat. When the system's libraries do not load it
 * (a slim image without them), the AL2023 builds the package ships (glibc >= 2.34) are put on
 * LD_LIBRARY_PATH for the browser only. Fonts: the system's fontconfig setup plus the package's
 * Open Sans, so a machine without any font still renders text.
 */
import { execFile } from "node:child_process"
import { randomBytes } from "node:crypto"
import { createReadStream, createWriteStream } from "node:fs"
import { access, constants, mkdir, readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises"
import { createRequire } from "node:module"
import * as path from "node:path"
import { pipeline } from "node:stream/promises"
import { promisify } from "node:util"
import { brotliDecompress, createBrotliDecompress } from "node:zlib"
import { playwright } from "./playwright.ts"

/** WA_BROWSER: `auto` (the order above), `system` (never the bundled one), `bundled` (only it). */
export type BrowserChoice = "auto" | "system" | "bundled"
export const browserChoices: ReadonlyArray<BrowserChoice> = ["auto", "system", "bundled"]

/** Where the launched binary comes from (logged as `browser_source`). */
export type ChromiumSource = "CHROMIUM_PATH" | "playwright-cache" | "system" | "bundled" | "configured"

export interface PreparedChromium {
  readonly executablePath: string
  /** Added to the browser's environment (not to this process's). */
  readonly env: Readonly<Record<string, string>>
  /** Extra fields for the launch log line. */
  readonly details: Readonly<Record<string, string>>
}

export interface LocalChromium {
  readonly source: ChromiumSource
  /** The binary; for the bundled browser where it is (or will be) unpacked. */
  readonly executablePath: string
  /** Set when the bundled browser was chosen: why CHROMIUM_PATH or the system browser were not. */
  readonly reason?: string | undefined
  /** Makes the binary ready to launch (unpacks the bundled one on first use). */
  readonly prepare: () => Promise<PreparedChromium>
}

export interface ChromiumSelectionOptions {
  /** CHROMIUM_PATH (empty means unset). */
  readonly explicitPath?: string | undefined
  /** WA_BROWSER; default `auto`. */
  readonly choice?: BrowserChoice | undefined
  /** The bundled browser is unpacked under `<dataDir>/chromium/`. */
  readonly dataDir: string
  /** System binaries to look for, in order; default: Playwright's cache, /usr/bin/chromium, /usr/bin/chromium-browser. */
  readonly systemPaths?: ReadonlyArray<string> | undefined
  /**
   * Libraries of the bundled browser: `auto` uses the system's when they load the binary, else
   * the bundled ones; `bundled` always the bundled ones (tests: what a bare machine gets).
   */
  readonly bundledLibraries?: "auto" | "bundled" | undefined
}

/** The path a missing browser is reported at (and the historical default). */
export const defaultSystemChromium = "/usr/bin/chromium"

const isExecutable = (file: string): Promise<boolean> => access(file, constants.X_OK).then(() => true, () => false)
const exists = (file: string): Promise<boolean> => access(file).then(() => true, () => false)

/** Playwright's own browser cache (when `npx playwright install chromium` was run), then the usual system paths. */
export const systemChromiumCandidates = async (): Promise<ReadonlyArray<{ readonly path: string; readonly source: ChromiumSource }>> => {
  const candidates: Array<{ path: string; source: ChromiumSource }> = []
  try {
    const cached = (await playwright()).chromium.executablePath()
    if (cached) candidates.push({ path: cached, source: "playwright-cache" })
  } catch {
    // playwright-core without a registry entry for this platform
  }
  candidates.push({ path: defaultSystemChromium, source: "system" }, { path: "/usr/bin/chromium-browser", source: "system" })
  return candidates
}

export interface BundledChromiumPackage {
  readonly version: string
  readonly binDir: string
}

/** The installed @sparticuz/chromium, or why it cannot be used here. */
export const bundledChromiumPackage = async (): Promise<BundledChromiumPackage | string> => {
  if (process.platform !== "linux" || process.arch !== "x64") {
    return `the bundled Chromium (@sparticuz/chromium) is built for linux-x64 only, not ${process.platform}-${process.arch}`
  }
  let entry: string
  try {
    entry = createRequire(import.meta.url).resolve("@sparticuz/chromium")
  } catch {
    return "the npm package @sparticuz/chromium is not installed (run npm install)"
  }
  // build/index.js -> the package root
  const root = path.resolve(path.dirname(entry), "..")
  try {
    const manifest = JSON.parse(await readFile(path.join(root, "package.json"), "utf8")) as { name?: unknown; version?: unknown }
    const binDir = path.join(root, "bin")
    if (manifest.name !== "@sparticuz/chromium" || typeof manifest.version !== "string" || !(await exists(path.join(binDir, "chromium.br")))) {
      return `the npm package @sparticuz/chromium at ${root} has no bin/chromium.br`
    }
    return { version: manifest.version, binDir }
  } catch (error) {
    return `cannot read the npm package @sparticuz/chromium at ${root}: ${String(error)}`
  }
}

/** Picks the browser to launch (no unpacking yet: that happens at the first launch). */
export const selectChromium = async (options: ChromiumSelectionOptions): Promise<LocalChromium> => {
  const choice = options.choice ?? "auto"
  const explicitPath = options.explicitPath !== undefined && options.explicitPath !== "" ? options.explicitPath : undefined
  const local = (source: ChromiumSource, executablePath: string): LocalChromium => ({
    source,
    executablePath,
    prepare: () => Promise.resolve({ executablePath, env: {}, details: {} })
  })
  if (choice !== "bundled") {
    if (explicitPath !== undefined) return local("CHROMIUM_PATH", explicitPath)
    const candidates = options.systemPaths !== undefined
      ? options.systemPaths.map((p) => ({ path: p, source: "system" as const }))
      : await systemChromiumCandidates()
    for (const candidate of candidates) {
      if (await isExecutable(candidate.path)) return local(candidate.source, candidate.path)
    }
    // Reported as missing at the first launch, under its usual name.
    if (choice === "system") return local("system", candidates[0]?.path ?? defaultSystemChromium)
  }
  const bundled = await bundledChromiumPackage()
  if (typeof bundled === "string") {
    if (choice === "bundled") {
      return { source: "bundled", executablePath: "", reason: "WA_BROWSER=bundled", prepare: () => Promise.reject(new Error(bundled)) }
    }
    // Nothing to fall back to: the usual binary is reported missing, with why the bundled one is not there.
    return { ...local("system", defaultSystemChromium), reason: bundled }
  }
  const dir = bundledDirectory(options.dataDir, bundled.version)
  return {
    source: "bundled",
    executablePath: path.join(dir, "chromium"),
    reason: choice === "bundled"
      ? explicitPath !== undefined ? "WA_BROWSER=bundled (CHROMIUM_PATH is ignored)" : "WA_BROWSER=bundled"
      : "no CHROMIUM_PATH and no system Chromium",
    prepare: () => prepareBundled(bundled, dir, options.bundledLibraries ?? "auto")
  }
}

const bundledDirectory = (dataDir: string, version: string) => path.join(path.resolve(dataDir), "chromium", version)

/** Written last into an unpacked directory: its presence means the unpack completed. */
const completeMarker = ".complete"

const unpacking = new Map<string, Promise<void>>()

const prepareBundled = async (
  pkg: BundledChromiumPackage,
  dir: string,
  libraries: "auto" | "bundled"
): Promise<PreparedChromium> => {
  let unpacked = false
  if (!(await exists(path.join(dir, completeMarker)))) {
    // One unpack per directory at a time in this process; other processes race on the rename.
    let pending = unpacking.get(dir)
    if (pending === undefined) {
      pending = unpackBundled(pkg, dir).finally(() => unpacking.delete(dir))
      unpacking.set(dir, pending)
    }
    await pending
    unpacked = true
  }
  const executablePath = path.join(dir, "chromium")
  const libDir = path.join(dir, "lib")
  const fonts = { FONTCONFIG_FILE: path.join(dir, "fonts.conf") }
  const withBundledLibs = {
    ...fonts,
    LD_LIBRARY_PATH: [libDir, ...(process.env["LD_LIBRARY_PATH"] ?? "").split(":").filter((p) => p !== "" && p !== libDir)].join(":")
  }
  const details = { package: `@sparticuz/chromium@${pkg.version}`, unpacked_now: String(unpacked) }
  if (libraries === "auto") {
    const probe = await versionOf(executablePath, fonts)
    if (probe.ok) return { executablePath, env: fonts, details: { ...details, libraries: "system" } }
  }
  const probe = await versionOf(executablePath, withBundledLibs)
  if (!probe.ok) {
    throw new Error(`the bundled Chromium at ${executablePath} does not start on this machine: ${probe.error}`)
  }
  return { executablePath, env: withBundledLibs, details: { ...details, libraries: "bundled" } }
}

/** `chromium --version`: fails at once (dynamic linker) when a library is missing. */
const versionOf = (executablePath: string, env: Readonly<Record<string, string>>) =>
  promisify(execFile)(executablePath, ["--version"], { env: { ...process.env, ...env }, timeout: 15_000 }).then(
    () => ({ ok: true as const }),
    (error: { stderr?: string; message?: string }) => ({ ok: false as const, error: (error.stderr || error.message || String(error)).trim().split("\n")[0] ?? "" })
  )

/**
 * Unpacks into a fresh sibling directory and renames it into place, so a crash mid-way leaves
 * no half-unpacked browser that a later start would trust.
 */
const unpackBundled = async (pkg: BundledChromiumPackage, dir: string): Promise<void> => {
  const parent = path.dirname(dir)
  await mkdir(parent, { recursive: true })
  const staging = path.join(parent, `.unpacking-${pkg.version}-${process.pid}-${randomBytes(4).toString("hex")}`)
  await mkdir(staging)
  try {
    await pipeline(
      createReadStream(path.join(pkg.binDir, "chromium.br"), { highWaterMark: 1 << 22 }),
      createBrotliDecompress({ chunkSize: 1 << 21 }),
      createWriteStream(path.join(staging, "chromium"), { mode: 0o755 })
    )
    // lib/*.so: NSS, NSPR and expat (Amazon Linux 2023 builds), used only when the system's do not load.
    await extractTar(await promisify(brotliDecompress)(await readFile(path.join(pkg.binDir, "al2023.tar.br"))), staging)
    // fonts.conf (ignored: it names /tmp/fonts) and fonts/Open_Sans/*.ttf
    await extractTar(await promisify(brotliDecompress)(await readFile(path.join(pkg.binDir, "fonts.tar.br"))), staging, (name) => name.startsWith("fonts/"))
    await writeFile(path.join(staging, "fonts.conf"), fontsConf(dir))
    await writeFile(path.join(staging, completeMarker), `${new Date().toISOString()}\n`)
    try {
      await rename(staging, dir)
    } catch (error) {
      // Another process finished first (ENOTEMPTY/EEXIST) and its copy is complete: use it.
      if (!(await exists(path.join(dir, completeMarker)))) {
        // A leftover without the marker: replace it.
        await rm(dir, { recursive: true, force: true })
        await rename(staging, dir).catch((again: unknown) => {
          throw new Error(`cannot move the unpacked Chromium into ${dir}: ${String(again)} (first: ${String(error)})`)
        })
      }
    }
  } finally {
    await rm(staging, { recursive: true, force: true }).catch(() => undefined)
  }
  await removeOtherVersions(parent, path.basename(dir))
}

/** The system's fontconfig setup (when there is one) plus the bundled fonts. */
const fontsConf = (dir: string) =>
  [
    `<?xml version="1.0"?>`,
    `<!DOCTYPE fontconfig SYSTEM "fonts.dtd">`,
    `<fontconfig>`,
    `  <include ignore_missing="yes">/etc/fonts/fonts.conf</include>`,
    `  <dir>${escapeXml(path.join(dir, "fonts"))}</dir>`,
    `  <cachedir>${escapeXml(path.join(dir, "fonts-cache"))}</cachedir>`,
    `</fontconfig>`,
    ``
  ].join("\n")

const escapeXml = (text: string) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")

/** Earlier package versions' browsers and staging directories abandoned over an hour ago. */
const removeOtherVersions = async (parent: string, keep: string) => {
  const entries = await readdir(parent).catch(() => [] as Array<string>)
  for (const entry of entries) {
    if (entry === keep) continue
    const full = path.join(parent, entry)
    if (entry.startsWith(".unpacking-")) {
      const age = await stat(full).then((s) => Date.now() - s.mtimeMs, () => 0)
      if (age < 3_600_000) continue
    } else if (!(await exists(path.join(full, completeMarker)))) {
      continue // not ours
    }
    await rm(full, { recursive: true, force: true }).catch(() => undefined)
  }
}

/**
 * A minimal tar reader for the package's two small archives: regular files and directories
 * (ustar names with prefix; pax and GNU long-name records are honoured), nothing outside `into`.
 */
export const extractTar = async (archive: Uint8Array, into: string, include: (name: string) => boolean = () => true) => {
  const buffer = Buffer.from(archive.buffer, archive.byteOffset, archive.byteLength)
  const field = (header: Buffer, start: number, length: number) => {
    const raw = header.subarray(start, start + length)
    const end = raw.indexOf(0)
    return raw.subarray(0, end === -1 ? length : end).toString("utf8")
  }
  const octal = (header: Buffer, start: number, length: number) => {
    const text = field(header, start, length).trim()
    return text === "" ? 0 : Number.parseInt(text, 8)
  }
  const root = path.resolve(into)
  let offset = 0
  let longName: string | undefined
  while (offset + 512 <= buffer.length) {
    const header = buffer.subarray(offset, offset + 512)
    if (header.every((byte) => byte === 0)) break
    const size = octal(header, 124, 12)
    const type = String.fromCharCode(header[156] ?? 0)
    const body = buffer.subarray(offset + 512, offset + 512 + size)
    offset += 512 + Math.ceil(size / 512) * 512
    if (type === "x") {
      const pathRecord = /(?:^|\n)\d+ path=([^\n]*)\n/.exec(body.toString("utf8"))
      if (pathRecord?.[1] !== undefined) longName = pathRecord[1]
      continue
    }
    if (type === "L") {
      longName = body.toString("utf8").replace(/\0+$/, "")
      continue
    }
    if (type === "g") continue
    const prefix = field(header, 345, 155)
    const name = (longName ?? (prefix !== "" ? `${prefix}/${field(header, 0, 100)}` : field(header, 0, 100))).replace(/^\.\//, "")
    longName = undefined
    if (name === "" || !include(name)) continue
    const target = path.resolve(root, name)
    if (target !== root && !target.startsWith(root + path.sep)) throw new Error(`tar entry outside the target directory: ${name}`)
    const mode = octal(header, 100, 8) & 0o777
    if (type === "5") {
      await mkdir(target, { recursive: true })
    } else if (type === "0" || type === "\0") {
      await mkdir(path.dirname(target), { recursive: true })
      await writeFile(target, body, { mode: mode === 0 ? 0o644 : mode })
    }
    // Links and special files: none in these archives; skipped.
  }
}
