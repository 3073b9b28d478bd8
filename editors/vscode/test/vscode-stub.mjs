// A stand-in for the "vscode" module: a plain object with just the API the
// extension uses, recording what the extension registers and shows. It is
// injected through the CommonJS loader (see installVscodeStub).
import Module from "node:module";
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

class Uri {
  constructor(scheme, authority, path, query, fragment) {
    this.scheme = scheme;
    this.authority = authority ?? "";
    this.path = path ?? "";
    this.query = query ?? "";
    this.fragment = fragment ?? "";
  }
  get fsPath() {
    return this.path;
  }
  static file(p) {
    return new Uri("file", "", p);
  }
  static parse(s) {
    const u = new URL(s);
    return new Uri(u.protocol.replace(/:$/, ""), u.host, decodeURIComponent(u.pathname), u.search.replace(/^\?/, ""));
  }
  static from(c) {
    return new Uri(c.scheme, c.authority, c.path, c.query, c.fragment);
  }
  static joinPath(base, ...parts) {
    return new Uri(base.scheme, base.authority, [base.path, ...parts].join("/").replace(/\/+/g, "/"), base.query);
  }
  with(c) {
    return new Uri(c.scheme ?? this.scheme, c.authority ?? this.authority, c.path ?? this.path, c.query ?? this.query);
  }
  toString() {
    return `${this.scheme}://${this.authority}${this.path}${this.query ? `?${this.query}` : ""}`;
  }
}

class EventEmitter {
  constructor() {
    this.listeners = new Set();
    this.event = (fn) => {
      this.listeners.add(fn);
      return { dispose: () => this.listeners.delete(fn) };
    };
  }
  fire(v) {
    for (const fn of this.listeners) fn(v);
  }
  dispose() {
    this.listeners.clear();
  }
}

class ThemeColor {
  constructor(id) {
    this.id = id;
  }
}

class Range {
  constructor(sl, sc, el, ec) {
    // new Range(startLine, startChar, endLine, endChar) or new Range(start, end)
    if (typeof sl === "object") {
      this.start = sl;
      this.end = sc;
      return;
    }
    this.start = { line: sl, character: sc };
    this.end = { line: el, character: ec };
  }
}

class TreeItem {
  constructor(label, collapsibleState) {
    this.label = label;
    this.collapsibleState = collapsibleState;
  }
}

class ThemeIcon {
  constructor(id) {
    this.id = id;
  }
}

class MarkdownString {
  constructor(value) {
    this.value = value ?? "";
  }
}

class Diagnostic {
  constructor(range, message, severity) {
    this.range = range;
    this.message = message;
    this.severity = severity;
  }
}

class CodeAction {
  constructor(title, kind) {
    this.title = title;
    this.kind = kind;
  }
}

/**
 * Makes a fresh stub. `config` holds the apserver.* settings; `answers`
 * decides what showInformationMessage etc. return.
 */
export function createVscodeStub({ config = {}, answers = {} } = {}) {
  const rec = {
    commands: new Map(),
    executed: [],
    viewProviders: new Map(),
    contentProviders: new Map(),
    statusBarItems: [],
    outputLines: [],
    messages: [],
    webviewPanels: [],
    codeActionProviders: [],
    treeViews: new Map(),
    opened: [],
    shown: [],
    progress: [],
    diagnostics: new Map(),
  };
  const disposable = () => ({ dispose() {} });
  const showMessage = (level) => async (text, ...items) => {
    const buttons = items.filter((i) => typeof i === "string");
    rec.messages.push({ level, text, buttons });
    const answer = answers[level];
    return typeof answer === "function" ? answer(text, buttons) : undefined;
  };
  const vscode = {
    Uri,
    EventEmitter,
    ThemeColor,
    Range,
    CodeAction,
    Diagnostic,
    DiagnosticSeverity: { Error: 0, Warning: 1, Information: 2, Hint: 3 },
    ProgressLocation: { SourceControl: 1, Window: 10, Notification: 15 },
    TreeItem,
    ThemeIcon,
    MarkdownString,
    TreeItemCollapsibleState: { None: 0, Collapsed: 1, Expanded: 2 },
    CodeActionKind: { QuickFix: { value: "quickfix" } },
    languages: {
      registerCodeActionsProvider(selector, provider, metadata) {
        rec.codeActionProviders.push({ selector, provider, metadata });
        return disposable();
      },
      getDiagnostics: () => [],
      createDiagnosticCollection(name) {
        return { name, set: (uri, d) => rec.diagnostics.set(String(uri), d), clear: () => rec.diagnostics.clear(), dispose() {} };
      },
    },
    StatusBarAlignment: { Left: 1, Right: 2 },
    ViewColumn: { Active: -1, Beside: -2, One: 1 },
    window: {
      createOutputChannel(name) {
        return {
          name,
          appendLine: (l) => rec.outputLines.push(l),
          append: (l) => rec.outputLines.push(l),
          show() {},
          dispose() {},
        };
      },
      createStatusBarItem(alignment, priority) {
        const item = { alignment, priority, text: "", tooltip: "", command: undefined, name: "", backgroundColor: undefined, visible: false };
        item.show = () => (item.visible = true);
        item.hide = () => (item.visible = false);
        item.dispose = () => (item.visible = false);
        rec.statusBarItems.push(item);
        return item;
      },
      createTreeView(id, options) {
        const view = { id, options, badge: undefined, visible: true, onDidChangeVisibility: () => disposable(), dispose() {} };
        rec.treeViews.set(id, view);
        return view;
      },
      registerWebviewViewProvider(id, provider, options) {
        rec.viewProviders.set(id, { provider, options });
        return disposable();
      },
      createWebviewPanel(viewType, title, column, options) {
        const panel = { viewType, title, options, visible: true, webview: makeWebview(), reveal() {}, onDidDispose: () => disposable(), dispose() {} };
        rec.webviewPanels.push(panel);
        return panel;
      },
      showInformationMessage: showMessage("info"),
      showWarningMessage: showMessage("warning"),
      showErrorMessage: showMessage("error"),
      showInputBox: async (opts) => (answers.input ? answers.input(opts) : undefined),
      showQuickPick: async (items, opts) => (answers.quickPick ? answers.quickPick(items, opts) : undefined),
      showTextDocument: async (doc, opts) => {
        rec.shown.push({ doc, opts });
        return doc;
      },
      showOpenDialog: async (opts) => (answers.openDialog ? answers.openDialog(opts) : undefined),
      async withProgress(opts, task) {
        const entry = { title: opts.title, cancellable: !!opts.cancellable, reports: [] };
        rec.progress.push(entry);
        const cancel = new EventEmitter();
        entry.cancel = () => cancel.fire();
        return task({ report: (r) => entry.reports.push(r) }, { isCancellationRequested: false, onCancellationRequested: cancel.event });
      },
    },
    commands: {
      registerCommand(id, fn) {
        rec.commands.set(id, fn);
        return { dispose: () => rec.commands.delete(id) };
      },
      async executeCommand(id, ...args) {
        rec.executed.push({ id, args });
        const fn = rec.commands.get(id);
        return fn ? fn(...args) : undefined;
      },
    },
    workspace: {
      workspaceFolders: config.__workspace ? [{ uri: Uri.file(config.__workspace), name: "ws", index: 0 }] : undefined,
      getConfiguration(section) {
        return {
          get(key, dflt) {
            const full = section ? `${section}.${key}` : key;
            return Object.prototype.hasOwnProperty.call(config, full) ? config[full] : dflt;
          },
        };
      },
      onDidChangeConfiguration: () => disposable(),
      registerTextDocumentContentProvider(scheme, provider) {
        rec.contentProviders.set(scheme, provider);
        return disposable();
      },
      openTextDocument: async (opts) => {
        rec.opened.push(opts);
        if (opts instanceof Uri) {
          // A file: its text, and positions as VS Code counts them (UTF-16 offsets).
          const text = readFileSync(opts.fsPath, "utf8");
          const positionAt = (off) => {
            const before = text.slice(0, off).split("\n");
            return { line: before.length - 1, character: before[before.length - 1].length };
          };
          return { uri: opts, getText: () => text, positionAt };
        }
        return { ...opts };
      },
      getWorkspaceFolder: (uri) =>
        config.__workspace && uri.path.startsWith(config.__workspace) ? { uri: Uri.file(config.__workspace), name: "ws", index: 0 } : undefined,
      asRelativePath: (uri) => (typeof uri === "string" ? uri : uri.path),
      isTrusted: config.__untrusted ? false : true,
      onDidGrantWorkspaceTrust: () => disposable(),
    },
    env: { openExternal: async () => true },
  };
  return { vscode, rec, makeWebview };
}

/** A fake webview: records html/options and posted messages; deliver() plays the page's messages. */
export function makeWebview() {
  const emitter = new EventEmitter();
  const wv = {
    html: "",
    options: {},
    cspSource: "https://stub.vscode-cdn.net",
    posted: [],
    asWebviewUri: (uri) => Uri.from({ scheme: "https", authority: "stub.vscode-cdn.net", path: uri.path }),
    postMessage: async (m) => {
      wv.posted.push(JSON.parse(JSON.stringify(m)));
      return true;
    },
    onDidReceiveMessage: emitter.event,
    deliver: (m) => emitter.fire(m),
  };
  return wv;
}

/** Makes require("vscode") return the stub (a loader hook plus a require.cache entry). */
export function installVscodeStub(vscode) {
  const fakePath = "/__stub__/vscode.js";
  const origResolve = Module._resolveFilename;
  Module._resolveFilename = function (request, ...rest) {
    if (request === "vscode") return fakePath;
    return origResolve.call(this, request, ...rest);
  };
  const m = new Module(fakePath);
  m.filename = fakePath;
  m.loaded = true;
  m.exports = vscode;
  Module._cache[fakePath] = m;
  return () => {
    Module._resolveFilename = origResolve;
    delete Module._cache[fakePath];
  };
}

export { pathToFileURL };
