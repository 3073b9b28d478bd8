// A small, safe Markdown renderer for agent messages. Every piece of source
// text is HTML-escaped before any markup is added, so the only tags in the
// output are the ones written here; links keep only http(s) and mailto
// targets. It handles what agents write: paragraphs, headings, fenced code,
// lists (nested by indent), block quotes, tables, rules, and inline code,
// bold, italic, strike-through and links. An unclosed fence (a message
// still streaming) renders as code up to the end.

export function escapeHtml(s: string): string {
  return s
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");
}

const SAFE_URL = /^(https?:\/\/|mailto:)/i;

/** Returns the URL if it is safe to link to, else null. */
export function safeUrl(raw: string): string | null {
  const url = raw.trim();
  return SAFE_URL.test(url) ? url : null;
}

// Placeholders for code spans and links so later inline rules can't touch
// them. \u0000 cannot occur in escaped text that reaches here.
const PH = "\u0000";

/** Renders inline Markdown of one block of text (already split from blocks). */
export function renderInline(src: string): string {
  const saved: string[] = [];
  const keep = (html: string) => {
    saved.push(html);
    return `${PH}${saved.length - 1}${PH}`;
  };
  let s = src.replace(/\u0000/g, "");

  // Code spans: `code` or ``code with ` inside``.
  s = s.replace(/(`+)([\s\S]*?[^`])\1(?!`)/g, (_m, _ticks: string, code: string) =>
    keep(`<code>${escapeHtml(code.replace(/^ (.*) $/, "$1"))}</code>`),
  );
  // Links [text](url "title") and autolinks <https://…>.
  s = s.replace(/\[([^\]\n]+)\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g, (m, text: string, url: string) => {
    const u = safeUrl(url);
    if (!u) return keep(escapeHtml(text));
    return keep(`<a href="${escapeHtml(u)}" data-href="${escapeHtml(u)}" title="${escapeHtml(u)}">${renderInlineNoLinks(text)}</a>`);
  });
  s = s.replace(/<((?:https?:\/\/|mailto:)[^\s>]+)>/gi, (_m, url: string) =>
    keep(`<a href="${escapeHtml(url)}" data-href="${escapeHtml(url)}">${escapeHtml(url)}</a>`),
  );

  s = escapeHtml(s);
  s = emphasis(s);
  // Hard line breaks: two trailing spaces or a backslash before a newline.
  s = s.replace(/( {2,}|\\)\n/g, "<br>");
  const ref = new RegExp(`${PH}(\\d+)${PH}`, "g");
  // Saved pieces may hold placeholders themselves (code inside link text).
  for (let n = 0; n < 3 && s.includes(PH); n++) s = s.replace(ref, (_m, i: string) => saved[Number(i)] ?? "");
  return s.replace(/\u0000/g, "");
}

function renderInlineNoLinks(text: string): string {
  return emphasis(escapeHtml(text));
}

function emphasis(s: string): string {
  return s
    .replace(/\*\*(?=\S)([\s\S]*?\S)\*\*/g, "<strong>$1</strong>")
    .replace(/(^|[^\w])__(?=\S)([\s\S]*?\S)__(?!\w)/g, "$1<strong>$2</strong>")
    .replace(/~~(?=\S)([\s\S]*?\S)~~/g, "<del>$1</del>")
    .replace(/(^|[^*\w])\*(?=[^\s*])([^*\n]*?[^\s*])\*(?!\*)/g, "$1<em>$2</em>")
    .replace(/(^|[^\w])_(?=[^\s_])([^_\n]*?[^\s_])_(?!\w)/g, "$1<em>$2</em>");
}

interface ListFrame {
  ordered: boolean;
  indent: number;
}

const FENCE = /^( {0,3})(`{3,}|~{3,})\s*([\w+#.-]*).*$/;
const HEADING = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const RULE = /^ {0,3}([-*_])(\s*\1){2,}\s*$/;
const LIST_ITEM = /^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/;
const QUOTE = /^ {0,3}>\s?(.*)$/;
const TABLE_SEP = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;

function splitRow(line: string): string[] {
  let t = line.trim();
  if (t.startsWith("|")) t = t.slice(1);
  if (t.endsWith("|") && !t.endsWith("\\|")) t = t.slice(0, -1);
  return t.split(/(?<!\\)\|/).map((c) => c.trim().replace(/\\\|/g, "|"));
}

/** Renders a Markdown document to safe HTML. */
export function renderMarkdown(src: string): string {
  const lines = src.replace(/\r\n?/g, "\n").split("\n");
  const out: string[] = [];
  let para: string[] = [];
  const lists: ListFrame[] = [];

  const flushPara = () => {
    if (para.length) {
      out.push(`<p>${renderInline(para.join("\n"))}</p>`);
      para = [];
    }
  };
  const closeLists = (toDepth = 0) => {
    while (lists.length > toDepth) {
      const f = lists.pop()!;
      out.push(`</li></${f.ordered ? "ol" : "ul"}>`);
    }
  };

  let i = 0;
  while (i < lines.length) {
    const line = lines[i];

    const fence = FENCE.exec(line);
    if (fence) {
      flushPara();
      closeLists();
      const marker = fence[2];
      const lang = fence[3];
      const body: string[] = [];
      i++;
      while (i < lines.length && !(lines[i].trim().startsWith(marker[0].repeat(marker.length)) && lines[i].trim().replace(new RegExp(`^\\${marker[0]}+`), "").trim() === "")) {
        body.push(lines[i]);
        i++;
      }
      i++; // the closing fence (or past the end)
      const cls = lang ? ` class="language-${escapeHtml(lang)}"` : "";
      out.push(`<pre><code${cls}>${escapeHtml(body.join("\n"))}</code></pre>`);
      continue;
    }

    if (line.trim() === "") {
      flushPara();
      // A blank line inside a list keeps the list open if the next line continues it.
      const next = lines[i + 1];
      if (lists.length && !(next !== undefined && (LIST_ITEM.test(next) || /^\s{2,}\S/.test(next)))) closeLists();
      i++;
      continue;
    }

    const heading = HEADING.exec(line);
    if (heading) {
      flushPara();
      closeLists();
      const level = heading[1].length;
      out.push(`<h${level}>${renderInline(heading[2])}</h${level}>`);
      i++;
      continue;
    }

    if (RULE.test(line) && para.length === 0) {
      closeLists();
      out.push("<hr>");
      i++;
      continue;
    }

    const quote = QUOTE.exec(line);
    if (quote) {
      flushPara();
      closeLists();
      const body: string[] = [];
      while (i < lines.length) {
        const q = QUOTE.exec(lines[i]);
        if (!q) break;
        body.push(q[1]);
        i++;
      }
      out.push(`<blockquote>${renderMarkdown(body.join("\n"))}</blockquote>`);
      continue;
    }

    if (line.includes("|") && i + 1 < lines.length && TABLE_SEP.test(lines[i + 1]) && lines[i + 1].includes("-")) {
      flushPara();
      closeLists();
      const head = splitRow(line);
      const aligns = splitRow(lines[i + 1]).map((c) =>
        c.startsWith(":") && c.endsWith(":") ? "center" : c.endsWith(":") ? "right" : c.startsWith(":") ? "left" : "",
      );
      const cell = (tag: string, text: string, k: number) =>
        `<${tag}${aligns[k] ? ` class="align-${aligns[k]}"` : ""}>${renderInline(text)}</${tag}>`;
      const rows: string[] = [];
      i += 2;
      while (i < lines.length && lines[i].includes("|") && lines[i].trim() !== "") {
        const cells = splitRow(lines[i]);
        rows.push(`<tr>${head.map((_h, k) => cell("td", cells[k] ?? "", k)).join("")}</tr>`);
        i++;
      }
      out.push(
        `<table><thead><tr>${head.map((h, k) => cell("th", h, k)).join("")}</tr></thead><tbody>${rows.join("")}</tbody></table>`,
      );
      continue;
    }

    const li = LIST_ITEM.exec(line);
    if (li && (para.length === 0 || lists.length > 0)) {
      flushPara();
      const indent = li[1].replace(/\t/g, "    ").length;
      const ordered = /\d/.test(li[2]);
      // Close deeper lists.
      while (lists.length && lists[lists.length - 1].indent > indent) {
        const f = lists.pop()!;
        out.push(`</li></${f.ordered ? "ol" : "ul"}>`);
      }
      const top = lists[lists.length - 1];
      if (top && top.indent === indent && top.ordered === ordered) {
        out.push("</li><li>");
      } else if (top && top.indent === indent) {
        lists.pop();
        out.push(`</li></${top.ordered ? "ol" : "ul"}>`);
        out.push(openList(ordered, li[2]));
        lists.push({ ordered, indent });
      } else {
        out.push(openList(ordered, li[2]));
        lists.push({ ordered, indent });
      }
      // The item's text, plus continuation lines indented under it.
      const text: string[] = [li[3]];
      i++;
      while (
        i < lines.length &&
        lines[i].trim() !== "" &&
        !LIST_ITEM.test(lines[i]) &&
        !FENCE.test(lines[i]) &&
        !HEADING.test(lines[i])
      ) {
        text.push(lines[i].trim());
        i++;
      }
      out.push(renderInline(text.join("\n")));
      continue;
    }

    if (lists.length && /^\s{2,}\S/.test(line)) {
      // Continuation of a list item after a blank line.
      out.push(`<p>${renderInline(line.trim())}</p>`);
      i++;
      continue;
    }
    closeLists();
    para.push(line);
    i++;
  }
  flushPara();
  closeLists();
  return out.join("");
}

function openList(ordered: boolean, marker: string): string {
  if (!ordered) return "<ul><li>";
  const start = parseInt(marker, 10);
  return start > 1 ? `<ol start="${start}"><li>` : "<ol><li>";
}
