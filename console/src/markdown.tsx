/**
 * A small Markdown renderer for reports and agent output that builds React elements, never HTML
 * strings: whatever a report contains (a page quoted a <script>, a link to javascript:) ends up
 * as text. It covers what the service writes: headings, paragraphs, lists, block quotes, code,
 * rules, pipe tables, emphasis, inline code, links (http, https, mailto and in-page only) and the
 * report's citation markers [n], which link to the numbered entry of its "Sources" list.
 */
import { Fragment, type ReactNode } from "react"

const safeHref = (href: string): string | undefined => {
  const trimmed = href.trim()
  if (trimmed.startsWith("#")) return trimmed
  try {
    const url = new URL(trimmed)
    return ["http:", "https:", "mailto:"].includes(url.protocol) ? url.href : undefined
  } catch {
    return undefined
  }
}

/** Inline Markdown: `code`, [text](url), **strong**, *em* / _em_, and [n] citation markers. */
export const renderInline = (text: string, keyPrefix = "i"): Array<ReactNode> => {
  const out: Array<ReactNode> = []
  const pattern = /`([^`]+)`|\[([^\]]+)\]\(([^)\s]+)(?:\s+"[^"]*")?\)|\*\*([^*]+)\*\*|(?<![A-Za-z0-9_])__([^_]+)__(?![A-Za-z0-9_])|\*([^*\s][^*]*)\*|(?<![A-Za-z0-9])_([^_\s][^_]*)_(?![A-Za-z0-9])|\[(\d{1,4})\]/g
  let last = 0
  let n = 0
  for (const match of text.matchAll(pattern)) {
    const at = match.index
    if (at > last) out.push(text.slice(last, at))
    const key = `${keyPrefix}-${n++}`
    if (match[1] !== undefined) out.push(<code key={key}>{match[1]}</code>)
    else if (match[2] !== undefined) {
      const href = safeHref(match[3]!)
      out.push(href === undefined
        ? <Fragment key={key}>{renderInline(match[2], key)}</Fragment>
        : <a key={key} href={href} {...(href.startsWith("#") ? {} : { target: "_blank", rel: "noopener noreferrer nofollow" })}>{renderInline(match[2], key)}</a>)
    } else if (match[4] !== undefined || match[5] !== undefined) out.push(<strong key={key}>{renderInline(match[4] ?? match[5]!, key)}</strong>)
    else if (match[6] !== undefined || match[7] !== undefined) out.push(<em key={key}>{renderInline(match[6] ?? match[7]!, key)}</em>)
    else if (match[8] !== undefined) out.push(<a key={key} className="cite" href={`#source-${match[8]}`}>[{match[8]}]</a>)
    last = at + match[0].length
  }
  if (last < text.length) out.push(text.slice(last))
  return out
}

type Block =
  | { kind: "heading"; level: number; text: string }
  | { kind: "paragraph"; text: string }
  | { kind: "code"; text: string }
  | { kind: "quote"; lines: Array<string> }
  | { kind: "list"; ordered: boolean; items: Array<{ n: number; text: string }> }
  | { kind: "table"; head: Array<string>; rows: Array<Array<string>> }
  | { kind: "rule" }

const cells = (line: string) => line.trim().replace(/^\|/, "").replace(/\|$/, "").split("|").map((c) => c.trim())

export const parseBlocks = (markdown: string): Array<Block> => {
  const lines = markdown.replace(/\r\n?/g, "\n").split("\n")
  const blocks: Array<Block> = []
  let i = 0
  while (i < lines.length) {
    const line = lines[i]!
    if (line.trim() === "") {
      i++
      continue
    }
    const fence = /^\s*(```|~~~)/.exec(line)
    if (fence) {
      const body: Array<string> = []
      i++
      while (i < lines.length && !lines[i]!.trim().startsWith(fence[1]!)) body.push(lines[i++]!)
      i++
      blocks.push({ kind: "code", text: body.join("\n") })
      continue
    }
    const heading = /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line)
    if (heading) {
      blocks.push({ kind: "heading", level: heading[1]!.length, text: heading[2]! })
      i++
      continue
    }
    if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) {
      blocks.push({ kind: "rule" })
      i++
      continue
    }
    if (/^\s*>/.test(line)) {
      const quoted: Array<string> = []
      while (i < lines.length && /^\s*>/.test(lines[i]!)) quoted.push(lines[i++]!.replace(/^\s*>\s?/, ""))
      blocks.push({ kind: "quote", lines: quoted })
      continue
    }
    if (line.includes("|") && i + 1 < lines.length && /^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$/.test(lines[i + 1]!)) {
      const head = cells(line)
      const rows: Array<Array<string>> = []
      i += 2
      while (i < lines.length && lines[i]!.includes("|") && lines[i]!.trim() !== "") rows.push(cells(lines[i++]!))
      blocks.push({ kind: "table", head, rows })
      continue
    }
    const item = /^\s*([-*+]|(\d{1,9})[.)])\s+(.*)$/.exec(line)
    if (item) {
      const ordered = item[2] !== undefined
      const items: Array<{ n: number; text: string }> = []
      while (i < lines.length) {
        const next = /^\s*([-*+]|(\d{1,9})[.)])\s+(.*)$/.exec(lines[i]!)
        if (next && (next[2] !== undefined) === ordered) {
          items.push({ n: next[2] !== undefined ? Number(next[2]) : items.length + 1, text: next[3]! })
          i++
        } else if (next === null && lines[i]!.trim() !== "" && /^\s{2,}/.test(lines[i]!) && items.length > 0) {
          items[items.length - 1]!.text += ` ${lines[i++]!.trim()}`
        } else break
      }
      blocks.push({ kind: "list", ordered, items })
      continue
    }
    const paragraph: Array<string> = []
    while (i < lines.length && lines[i]!.trim() !== "" && !/^(#{1,6}\s|\s*```|\s*~~~|\s*>|\s*([-*+]|\d{1,9}[.)])\s)/.test(lines[i]!)) {
      paragraph.push(lines[i++]!.trim())
    }
    if (paragraph.length === 0) paragraph.push(lines[i++]!.trim())
    blocks.push({ kind: "paragraph", text: paragraph.join(" ") })
  }
  return blocks
}

export const Markdown = ({ source }: { source: string }) => {
  let section = ""
  const elements = parseBlocks(source).map((block, index) => {
    const key = `b${index}`
    switch (block.kind) {
      case "heading": {
        section = block.text.toLowerCase()
        const Tag = `h${Math.min(6, block.level + 1)}` as "h2"
        return <Tag key={key}>{renderInline(block.text, key)}</Tag>
      }
      case "paragraph":
        return <p key={key}>{renderInline(block.text, key)}</p>
      case "code":
        return <pre key={key}><code>{block.text}</code></pre>
      case "quote":
        return <blockquote key={key}><Markdown source={block.lines.join("\n")} /></blockquote>
      case "rule":
        return <hr key={key} />
      case "table":
        return (
          <table key={key}>
            <thead><tr>{block.head.map((c, j) => <th key={j}>{renderInline(c, `${key}h${j}`)}</th>)}</tr></thead>
            <tbody>{block.rows.map((row, r) => <tr key={r}>{row.map((c, j) => <td key={j}>{renderInline(c, `${key}r${r}c${j}`)}</td>)}</tr>)}</tbody>
          </table>
        )
      case "list": {
        // The numbered entries of a report's Sources list are the targets of its [n] markers.
        const sources = block.ordered && section === "sources"
        const items = block.items.map((item) => (
          <li key={item.n} value={block.ordered ? item.n : undefined} id={sources ? `source-${item.n}` : undefined}>{renderInline(item.text, `${key}-${item.n}`)}</li>
        ))
        return block.ordered ? <ol key={key}>{items}</ol> : <ul key={key}>{items}</ul>
      }
    }
  })
  return <div className="markdown">{elements}</div>
}
