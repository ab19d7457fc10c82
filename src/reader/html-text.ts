/**
 * Fast main text of an HTML document without a browser, for change detection at scale (Track
 * reads thousands of pages a minute; a Chromium extraction per page would cost a core). It keeps
 * `<main>` (else `<article>`, else `<body>`), drops scripts, styles, templates, SVG and the page
 * chrome (`nav`, `header`, `footer`, `aside`), turns block elements into line breaks and decodes
 * entities. The title comes from `<title>`.
 */
const named: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: "\"", apos: "'", nbsp: " ", hellip: "…", mdash: "—", ndash: "–", copy: "©", reg: "®", euro: "€", pound: "£" }

export const decodeEntities = (text: string): string =>
  text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, body: string) => {
    if (body[0] === "#") {
      const code = body[1] === "x" || body[1] === "X" ? parseInt(body.slice(2), 16) : parseInt(body.slice(1), 10)
      return Number.isFinite(code) && code > 0 && code < 0x110000 ? String.fromCodePoint(code) : whole
    }
    return named[body.toLowerCase()] ?? whole
  })

const dropped = /<(script|style|noscript|template|svg|head|iframe|object)\b[\s\S]*?<\/\1\s*>/gi
const chrome = /<(nav|header|footer|aside)\b[\s\S]*?<\/\1\s*>/gi
const blocks = /<\/?(p|div|section|article|main|li|ul|ol|tr|table|h[1-6]|br|hr|blockquote|pre|dd|dt|dl|figure|figcaption|form|fieldset|details|summary)\b[^>]*>/gi

const inner = (html: string, tag: string): string | undefined => {
  const open = new RegExp(`<${tag}\\b[^>]*>`, "i").exec(html)
  if (open === null) return undefined
  const close = html.toLowerCase().lastIndexOf(`</${tag}`)
  return close > open.index ? html.slice(open.index + open[0].length, close) : html.slice(open.index + open[0].length)
}

export const htmlText = (html: string): { readonly title: string; readonly text: string } => {
  const title = decodeEntities((/<title\b[^>]*>([\s\S]*?)<\/title>/i.exec(html)?.[1] ?? "").replace(/\s+/g, " ").trim())
  const withoutComments = html.replace(/<!--[\s\S]*?-->/g, "").replace(dropped, " ")
  const region = inner(withoutComments, "main") ?? inner(withoutComments, "article") ?? inner(withoutComments, "body") ?? withoutComments
  const text = decodeEntities(region.replace(chrome, " ").replace(blocks, "\n").replace(/<[^>]+>/g, " "))
    .split("\n")
    .map((line) => line.replace(/[\s\u00a0]+/g, " ").trim())
    .filter((line) => line !== "")
    .join("\n")
  return { title, text }
}
