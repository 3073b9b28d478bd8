import { StringDecoder } from "node:string_decoder";

/**
 * Splits a byte stream into JSONL lines. A chunk may end in the middle of a
 * line (or of a UTF-8 character): that part is carried over and completed by
 * the next chunk. Empty lines are skipped; a trailing "\r" is dropped.
 */
export class JsonlDecoder {
  private readonly utf8 = new StringDecoder("utf8");
  private partial = "";

  /** Feeds one chunk; returns the complete lines it finished. */
  push(chunk: Buffer | string): string[] {
    const text = typeof chunk === "string" ? chunk : this.utf8.write(chunk);
    if (text === "") return [];
    const parts = (this.partial + text).split("\n");
    this.partial = parts.pop() ?? "";
    const lines: string[] = [];
    for (let line of parts) {
      if (line.endsWith("\r")) line = line.slice(0, -1);
      if (line.trim() !== "") lines.push(line);
    }
    return lines;
  }

  /** The unfinished line carried over so far (for diagnostics). */
  get pending(): string {
    return this.partial;
  }

  /** Returns what is left when the stream ends (a last line without "\n"). */
  end(): string[] {
    const rest = this.partial + this.utf8.end();
    this.partial = "";
    return rest.trim() === "" ? [] : [rest];
  }
}

/** Serializes one message as a JSONL line. */
export function encodeLine(message: unknown): string {
  return JSON.stringify(message) + "\n";
}
