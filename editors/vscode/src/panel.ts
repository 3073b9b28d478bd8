// The panel: a webview view in apserver's activity-bar container, and the
// same page opened as an editor tab. Both talk to the one Controller.

import * as vscode from "vscode";
import type { Controller, WebviewTarget } from "./controller";
import { makeNonce, renderWebviewHtml } from "./html";
import { isWebviewMessage } from "./messages";

export const VIEW_ID = "apserver.panel";
export const TAB_VIEW_TYPE = "apserver.panelTab";

function webviewOptions(extensionUri: vscode.Uri): vscode.WebviewOptions {
  return {
    enableScripts: true,
    localResourceRoots: [vscode.Uri.joinPath(extensionUri, "dist"), vscode.Uri.joinPath(extensionUri, "media")],
  };
}

/** Fills a webview with the panel and connects it to the controller. */
export function attachWebview(
  webview: vscode.Webview,
  extensionUri: vscode.Uri,
  controller: Controller,
  isVisible: () => boolean,
): vscode.Disposable {
  webview.options = webviewOptions(extensionUri);
  webview.html = renderWebviewHtml({
    cspSource: webview.cspSource,
    nonce: makeNonce(),
    scriptUri: webview.asWebviewUri(vscode.Uri.joinPath(extensionUri, "dist", "webview.js")).toString(),
    styleUri: webview.asWebviewUri(vscode.Uri.joinPath(extensionUri, "dist", "webview.css")).toString(),
  });
  const target: WebviewTarget = { webview, isVisible, ready: false };
  const reg = controller.addTarget(target);
  const sub = webview.onDidReceiveMessage((m: unknown) => {
    if (isWebviewMessage(m)) void controller.onWebviewMessage(target, m);
  });
  return {
    dispose: () => {
      reg.dispose();
      sub.dispose();
    },
  };
}

export class PanelProvider implements vscode.WebviewViewProvider {
  private view: vscode.WebviewView | undefined;
  private tab: vscode.WebviewPanel | undefined;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly controller: Controller,
  ) {}

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    const d = attachWebview(view.webview, this.extensionUri, this.controller, () => view.visible);
    view.onDidDispose(() => {
      d.dispose();
      if (this.view === view) this.view = undefined;
    });
  }

  /** Opens (or reveals) the panel as an editor tab. */
  openInEditor(): vscode.WebviewPanel {
    if (this.tab) {
      this.tab.reveal();
      return this.tab;
    }
    const panel = vscode.window.createWebviewPanel(
      TAB_VIEW_TYPE,
      "apserver",
      vscode.ViewColumn.Beside,
      { ...webviewOptions(this.extensionUri), retainContextWhenHidden: true },
    );
    panel.iconPath = vscode.Uri.joinPath(this.extensionUri, "media", "apserver.svg");
    const d = attachWebview(panel.webview, this.extensionUri, this.controller, () => panel.visible);
    panel.onDidDispose(() => {
      d.dispose();
      this.tab = undefined;
    });
    this.tab = panel;
    return panel;
  }

  /** Shows the sidebar view. */
  async reveal(): Promise<void> {
    if (this.view) {
      this.view.show(true);
      return;
    }
    await vscode.commands.executeCommand(`${VIEW_ID}.focus`);
  }
}
