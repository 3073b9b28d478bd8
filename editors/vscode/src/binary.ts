// Finding the apserver binary, in the order rust-analyzer uses for its
// server: the setting, then $APSERVER_PATH, then the binary bundled in the
// extension (bin/apserver), then PATH. Each candidate must answer
// `--version` before it is used.

import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";

export type BinarySource = "setting" | "env" | "bundled" | "path";

export interface FoundBinary {
  path: string;
  source: BinarySource;
  version: string;
}

export interface LookupInput {
  /** The apserver.path setting ("" when unset). */
  setting?: string;
  /** Environment to read APSERVER_PATH and PATH from. */
  env?: NodeJS.ProcessEnv;
  /** The extension's install directory (holds bin/apserver in a platform .vsix). */
  extensionPath?: string;
  platform?: NodeJS.Platform;
  /** Replaces the `--version` check (tests). */
  probe?: (file: string) => Promise<string>;
}

export interface LookupResult {
  found?: FoundBinary;
  /** One line per candidate that was tried and rejected. */
  tried: string[];
}

/** Runs `file --version` (falling back to `file version`) and returns its output line. */
export function probeVersion(file: string, timeoutMs = 5000): Promise<string> {
  const run = (args: string[]) =>
    new Promise<string>((resolve, reject) => {
      execFile(file, args, { timeout: timeoutMs, windowsHide: true }, (err, stdout) => {
        if (err) reject(err);
        else resolve(stdout.trim().split("\n")[0] ?? "");
      });
    });
  return run(["--version"]).catch((first: unknown) =>
    run(["version"]).catch(() => {
      throw first;
    }),
  );
}

function exeName(platform: NodeJS.Platform): string {
  return platform === "win32" ? "apserver.exe" : "apserver";
}

function expandHome(p: string, env: NodeJS.ProcessEnv): string {
  if (p === "~" || p.startsWith("~/")) return path.join(env.HOME ?? env.USERPROFILE ?? "", p.slice(1));
  return p;
}

export async function findApserver(input: LookupInput): Promise<LookupResult> {
  const env = input.env ?? process.env;
  const platform = input.platform ?? process.platform;
  const probe = input.probe ?? ((f: string) => probeVersion(f));
  const exe = exeName(platform);
  const candidates: { path: string; source: BinarySource }[] = [];
  if (input.setting && input.setting.trim() !== "") {
    candidates.push({ path: expandHome(input.setting.trim(), env), source: "setting" });
  }
  if (env.APSERVER_PATH && env.APSERVER_PATH.trim() !== "") {
    candidates.push({ path: expandHome(env.APSERVER_PATH.trim(), env), source: "env" });
  }
  if (input.extensionPath) {
    candidates.push({ path: path.join(input.extensionPath, "bin", exe), source: "bundled" });
  }
  const sep = platform === "win32" ? ";" : ":";
  for (const dir of (env.PATH ?? "").split(sep)) {
    if (dir) candidates.push({ path: path.join(dir, exe), source: "path" });
  }

  const tried: string[] = [];
  for (const c of candidates) {
    if (c.source === "path" || c.source === "bundled") {
      // Quietly skip files that don't exist on PATH or in the bundle.
      if (!fs.existsSync(c.path)) {
        if (c.source === "bundled") tried.push(`bundled ${c.path}: not present`);
        continue;
      }
    }
    try {
      const version = await probe(c.path);
      return { found: { path: c.path, source: c.source, version }, tried };
    } catch (e) {
      const why = e instanceof Error ? e.message.split("\n")[0] : String(e);
      tried.push(`${describe(c.source)} ${c.path}: \`--version\` failed (${why})`);
    }
  }
  if (!candidates.some((c) => c.source === "path")) tried.push("PATH: empty");
  else if (!tried.some((t) => t.startsWith("PATH"))) tried.push("PATH: no apserver found");
  return { tried };
}

function describe(source: BinarySource): string {
  switch (source) {
    case "setting":
      return "setting apserver.path =";
    case "env":
      return "APSERVER_PATH =";
    case "bundled":
      return "bundled";
    case "path":
      return "PATH:";
  }
}
