// The apserver client: spawns the binary, speaks JSONL JSON-RPC on its
// stdio, and restarts it when it crashes. It imports nothing from "vscode",
// so plain Node tests drive it against the real binary.

import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { JsonlDecoder, encodeLine } from "./jsonl";
import type {
  ClientMethod,
  ClientRequests,
  InitializeResponse,
  RequestId,
  JSONRPCErrorError as RpcError,
  ServerRequestMethod,
  ServerRequests,
} from "./protocol";

export type ClientState = "stopped" | "starting" | "ready" | "restarting" | "failed";

export interface ClientOptions {
  /** Path of the apserver binary. */
  command: string;
  args?: string[];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  clientInfo?: { name: string; title?: string; version: string };
  /** initialize's capabilities (e.g. { experimentalApi: true } for dynamic tools). */
  capabilities?: { experimentalApi?: boolean };
  /** Where stderr lines and the client's own diagnostics go. */
  log?: (line: string) => void;
  /** Restart the server when it exits unexpectedly (default true). */
  autoRestart?: boolean;
  /** Give up after this many crashes within restartWindowMs (default 3 / 60 s). */
  maxRestarts?: number;
  restartWindowMs?: number;
  /** Delay before a restart (default 300 ms, doubled per recent crash). */
  restartDelayMs?: number;
  /** Timeout for the initialize request (default 15 s). */
  initializeTimeoutMs?: number;
}

/** A JSON-RPC error answer, or the connection closing under a request. */
export class RequestError extends Error {
  constructor(
    message: string,
    readonly code: number,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = "RequestError";
  }
}

/** Code used when the server went away before answering. */
export const CONNECTION_CLOSED = -32099;
export const METHOD_NOT_FOUND = -32601;

export interface CrashInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** A sentence for the user, e.g. "apserver exited (signal SIGKILL); restarting." */
  message: string;
  willRestart: boolean;
}

interface Pending {
  method: string;
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
  timer?: NodeJS.Timeout;
}

type Listener<A extends unknown[]> = (...args: A) => void;

class Signal<A extends unknown[]> {
  private readonly listeners = new Set<Listener<A>>();
  on(fn: Listener<A>): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }
  fire(...args: A): void {
    for (const fn of [...this.listeners]) {
      try {
        fn(...args);
      } catch {
        // a listener's failure must not break the read loop
      }
    }
  }
}

type ServerRequestHandler<M extends ServerRequestMethod> = (
  params: ServerRequests[M]["params"],
  id: RequestId,
) => Promise<ServerRequests[M]["result"]> | ServerRequests[M]["result"];

export class AppServerClient {
  private child: ChildProcessWithoutNullStreams | undefined;
  private nextId = 1;
  private readonly pending = new Map<RequestId, Pending>();
  private readonly handlers = new Map<string, (params: any, id: RequestId) => unknown>();
  private _state: ClientState = "stopped";
  private stopping = false;
  private crashes: number[] = [];
  private restartTimer: NodeJS.Timeout | undefined;
  private _serverInfo: InitializeResponse | undefined;
  private generation = 0;

  readonly onNotification = new Signal<[method: string, params: any]>();
  /** Every server request, before its handler runs (for logging / UI). */
  readonly onServerRequest = new Signal<[method: string, params: any, id: RequestId]>();
  readonly onStateChange = new Signal<[state: ClientState, detail: string | undefined]>();
  readonly onCrash = new Signal<[info: CrashInfo]>();
  /** Fired after a restart's initialize succeeded. */
  readonly onRestarted = new Signal<[info: InitializeResponse]>();

  constructor(private readonly options: ClientOptions) {}

  get state(): ClientState {
    return this._state;
  }
  get pid(): number | undefined {
    return this.child?.pid;
  }
  get serverInfo(): InitializeResponse | undefined {
    return this._serverInfo;
  }

  private log(line: string): void {
    this.options.log?.(line);
  }

  private setState(state: ClientState, detail?: string): void {
    this._state = state;
    this.onStateChange.fire(state, detail);
  }

  /** Registers the handler for one kind of server request (one per method). */
  handle<M extends ServerRequestMethod>(method: M, handler: ServerRequestHandler<M>): () => void {
    this.handlers.set(method, handler);
    return () => {
      if (this.handlers.get(method) === handler) this.handlers.delete(method);
    };
  }

  /** Spawns the server and performs initialize / initialized. */
  async start(): Promise<InitializeResponse> {
    this.stopping = false;
    this.setState("starting");
    try {
      const info = await this.spawnAndInitialize();
      this.setState("ready");
      return info;
    } catch (e) {
      const msg = `apserver failed to start: ${errorText(e)}`;
      this.log(msg);
      this.killChild();
      this.setState("failed", msg);
      throw e;
    }
  }

  /** Stops the server (closing stdin first, then signals) and disables restarts. */
  async stop(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.restartTimer);
    const child = this.child;
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((r) => child.once("exit", () => r()));
      child.stdin.end();
      const t1 = setTimeout(() => child.kill("SIGTERM"), 2000);
      const t2 = setTimeout(() => child.kill("SIGKILL"), 4000);
      await exited;
      clearTimeout(t1);
      clearTimeout(t2);
    }
    this.child = undefined;
    this.failPending("apserver was stopped");
    this.setState("stopped");
  }

  /** Stops the current process (if any) and starts a fresh one. */
  async restart(): Promise<InitializeResponse> {
    await this.stop();
    this.crashes = [];
    return this.start();
  }

  request<M extends ClientMethod>(
    method: M,
    params: ClientRequests[M]["params"],
    opts?: { timeoutMs?: number },
  ): Promise<ClientRequests[M]["result"]> {
    return this.rawRequest(method, params, opts) as Promise<ClientRequests[M]["result"]>;
  }

  /** A request to any method, untyped. */
  rawRequest(method: string, params: unknown, opts?: { timeoutMs?: number }): Promise<unknown> {
    const child = this.child;
    if (!child || (this._state !== "ready" && method !== "initialize")) {
      return Promise.reject(
        new RequestError(`apserver is not running (${this._state}); cannot send ${method}`, CONNECTION_CLOSED),
      );
    }
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const p: Pending = { method, resolve, reject };
      if (opts?.timeoutMs) {
        p.timer = setTimeout(() => {
          this.pending.delete(id);
          reject(new RequestError(`${method} timed out after ${opts.timeoutMs} ms`, -32000));
        }, opts.timeoutMs);
      }
      this.pending.set(id, p);
      this.write({ id, method, params: params ?? {} });
    });
  }

  notify(method: string, params?: unknown): void {
    this.write(params === undefined ? { method } : { method, params });
  }

  private write(msg: unknown): void {
    const child = this.child;
    if (!child || !child.stdin.writable) return;
    child.stdin.write(encodeLine(msg));
  }

  private async spawnAndInitialize(): Promise<InitializeResponse> {
    const gen = ++this.generation;
    const { command, args = [], env, cwd } = this.options;
    this.log(`starting ${command} ${args.join(" ")}`.trim());
    const child = spawn(command, args, {
      env: env ?? process.env,
      cwd,
      stdio: ["pipe", "pipe", "pipe"],
    });
    this.child = child;
    const out = new JsonlDecoder();
    const err = new JsonlDecoder();
    child.stdout.on("data", (chunk: Buffer) => {
      for (const line of out.push(chunk)) this.onLine(line);
    });
    child.stderr.on("data", (chunk: Buffer) => {
      for (const line of err.push(chunk)) this.log(line);
    });
    child.stdin.on("error", (e) => this.log(`stdin: ${e.message}`));
    child.on("error", (e) => this.log(`apserver process: ${e.message}`));

    const spawned = new Promise<void>((resolve, reject) => {
      child.once("spawn", () => resolve());
      child.once("error", (e) => reject(e));
    });
    child.on("exit", (code, signal) => {
      for (const line of err.end()) this.log(line);
      if (gen === this.generation) this.onExit(code, signal);
    });
    await spawned;

    const timeoutMs = this.options.initializeTimeoutMs ?? 15000;
    const info = (await this.rawRequest(
      "initialize",
      {
        clientInfo: this.options.clientInfo ?? { name: "apserver-vscode", version: "0.0.0" },
        ...(this.options.capabilities ? { capabilities: this.options.capabilities } : {}),
      },
      { timeoutMs },
    )) as InitializeResponse;
    this.notify("initialized");
    this._serverInfo = info;
    this.log(`initialized: ${info.userAgent ?? ""} (pid ${child.pid})`);
    return info;
  }

  private onLine(line: string): void {
    let msg: any;
    try {
      msg = JSON.parse(line);
    } catch {
      this.log(`dropped a line that is not JSON: ${line.slice(0, 200)}`);
      return;
    }
    if (msg === null || typeof msg !== "object" || Array.isArray(msg)) {
      this.log(`dropped a non-object message: ${line.slice(0, 200)}`);
      return;
    }
    const hasId = "id" in msg && msg.id !== null && msg.id !== undefined;
    if (typeof msg.method === "string") {
      if (hasId) this.onRequest(msg.id, msg.method, msg.params);
      else this.onNotification.fire(msg.method, msg.params ?? {});
      return;
    }
    if (hasId) {
      const p = this.pending.get(msg.id);
      if (!p) {
        this.log(`response to an unknown request id ${JSON.stringify(msg.id)}`);
        return;
      }
      this.pending.delete(msg.id);
      clearTimeout(p.timer);
      if (msg.error) {
        const e = msg.error as RpcError;
        p.reject(new RequestError(`${p.method}: ${e.message}`, e.code, e.data));
      } else {
        p.resolve(msg.result);
      }
      return;
    }
    if (msg.error) this.log(`server error: ${msg.error.code} ${msg.error.message}`);
  }

  private onRequest(id: RequestId, method: string, params: unknown): void {
    this.onServerRequest.fire(method, params, id);
    const handler = this.handlers.get(method);
    if (!handler) {
      this.write({ id, error: { code: METHOD_NOT_FOUND, message: `client does not handle ${method}` } });
      return;
    }
    Promise.resolve()
      .then(() => handler(params, id))
      .then(
        (result) => this.write({ id, result }),
        (e) => this.write({ id, error: { code: -32603, message: errorText(e) } }),
      );
  }

  private failPending(reason: string): void {
    for (const [id, p] of this.pending) {
      clearTimeout(p.timer);
      p.reject(new RequestError(`${p.method}: ${reason}`, CONNECTION_CLOSED));
      this.pending.delete(id);
    }
  }

  private killChild(): void {
    const child = this.child;
    this.child = undefined;
    this.generation++;
    if (child && child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  }

  private onExit(code: number | null, signal: NodeJS.Signals | null): void {
    this.child = undefined;
    const how = signal ? `signal ${signal}` : `code ${code}`;
    this.failPending(`apserver exited (${how})`);
    if (this.stopping) return;
    if (this._state === "starting" || this._state === "restarting") {
      // start() or the restart loop sees initialize fail and reports it.
      this.log(`apserver exited during startup (${how})`);
      return;
    }
    const now = Date.now();
    const window = this.options.restartWindowMs ?? 60000;
    this.crashes = this.crashes.filter((t) => now - t < window);
    this.crashes.push(now);
    const max = this.options.maxRestarts ?? 3;
    const willRestart = (this.options.autoRestart ?? true) && this.crashes.length <= max;
    const message = willRestart
      ? `apserver exited unexpectedly (${how}); restarting it. A turn that was running was interrupted.`
      : `apserver exited unexpectedly (${how}) ${this.crashes.length} times within ${Math.round(window / 1000)} s; ` +
        `not restarting it. Use "apserver: Restart Server" after checking the log.`;
    this.log(message);
    this.onCrash.fire({ code, signal, message, willRestart });
    if (!willRestart) {
      this.setState("failed", message);
      return;
    }
    this.scheduleRestart();
  }

  private scheduleRestart(): void {
    this.setState("restarting", "apserver crashed; restarting");
    const base = this.options.restartDelayMs ?? 300;
    const delay = base * 2 ** Math.max(0, this.crashes.length - 1);
    clearTimeout(this.restartTimer);
    this.restartTimer = setTimeout(async () => {
      if (this.stopping) return;
      try {
        const info = await this.spawnAndInitialize();
        this.setState("ready");
        this.onRestarted.fire(info);
      } catch (e) {
        this.log(`restart failed: ${errorText(e)}`);
        this.killChild();
        const now = Date.now();
        this.crashes.push(now);
        if (this.crashes.length <= (this.options.maxRestarts ?? 3)) {
          this.scheduleRestart();
        } else {
          this.setState("failed", `apserver could not be restarted: ${errorText(e)}`);
        }
      }
    }, delay);
  }
}

export function errorText(e: unknown): string {
  if (e instanceof Error) return e.message;
  return String(e);
}

/** A text user input, as turn/start expects it (text_elements is snake_case). */
export function textInput(text: string) {
  return [{ type: "text" as const, text, text_elements: [] }];
}
