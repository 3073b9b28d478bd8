// One apserver per data dir across VS Code windows. Every window of a
// remote VS Code (code-server, Remote-SSH) has its own extension host, and
// one whose browser tab was closed lives on for the reconnection grace time
// with its apserver. The lock file, in the extension's global storage (one
// per user and machine), names the window that owns the server for a given
// command line; a window that starts one takes the lock over, and the
// previous owner, which watches the file, stops its server.
// No `vscode` import: plain Node, tested from Node.

import { createHash, randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";

export interface LockInfo {
  /** The owning extension host: "pid:random". */
  owner: string;
  /** Its apserver's pid (0 while starting). */
  apserver: number;
}

function alive(pid: number): boolean {
  if (!pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** The lock's key: what makes two servers the same (binary, arguments, data dir). */
export function lockKey(parts: unknown): string {
  return createHash("sha256").update(JSON.stringify(parts)).digest("hex").slice(0, 16);
}

export class ServerLock {
  readonly file: string;
  readonly me = `${process.pid}:${randomBytes(6).toString("hex")}`;
  private held = false;
  private watching = false;

  /** onLost: another window took the server over; stop ours. */
  constructor(
    dir: string,
    key: string,
    private readonly onLost: () => void,
  ) {
    this.file = path.join(dir, `server-${key}.lock`);
  }

  read(): LockInfo | undefined {
    try {
      const v = JSON.parse(fs.readFileSync(this.file, "utf8"));
      return typeof v?.owner === "string" ? { owner: v.owner, apserver: Number(v.apserver) || 0 } : undefined;
    } catch {
      return undefined;
    }
  }

  private write(apserver: number): void {
    fs.mkdirSync(path.dirname(this.file), { recursive: true });
    const tmp = `${this.file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, JSON.stringify({ owner: this.me, apserver }));
    fs.renameSync(tmp, this.file);
  }

  /**
   * Takes the lock. When another window's apserver holds it, claims it and
   * waits (up to timeoutMs) for that window to stop its server.
   * Resolves to the pid of a server that did not stop in time, else 0.
   */
  async acquire(timeoutMs = 10000): Promise<number> {
    const prev = this.read();
    this.write(0);
    this.held = true;
    this.watch();
    if (!prev || prev.owner === this.me || !alive(prev.apserver)) return 0;
    const end = Date.now() + timeoutMs;
    while (alive(prev.apserver)) {
      if (Date.now() > end) return prev.apserver;
      await new Promise((r) => setTimeout(r, 100));
    }
    return 0;
  }

  /** Records our server's pid (after each start or restart). */
  setServer(pid: number | undefined): void {
    if (this.held && this.read()?.owner === this.me) this.write(pid ?? 0);
  }

  private watch(): void {
    if (this.watching) return;
    this.watching = true;
    fs.watchFile(this.file, { interval: 300, persistent: false }, () => {
      if (!this.held) return;
      const l = this.read();
      if (l && l.owner !== this.me) {
        this.held = false;
        this.onLost();
      }
    });
  }

  get isHeld(): boolean {
    return this.held;
  }

  release(): void {
    if (this.watching) fs.unwatchFile(this.file);
    this.watching = false;
    if (this.held && this.read()?.owner === this.me) {
      try {
        fs.unlinkSync(this.file);
      } catch {
        // already gone
      }
    }
    this.held = false;
  }
}
